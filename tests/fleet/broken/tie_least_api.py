"""Broken fleet: among plans of equal cost it prefers the lowest API share, not
the fewest owned then fewest rented cards (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(tie_least_api=True)
