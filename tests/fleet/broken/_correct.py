"""The fleet base solution with no mistake switched on (must pass every level)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make()
