"""The `fleet` exercise: a procurement planner — owned, rented and API capacity for a demand."""
