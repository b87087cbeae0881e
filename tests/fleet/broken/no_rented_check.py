"""Broken fleet: a negative rented count is not refused (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(no_rented_check=True)
