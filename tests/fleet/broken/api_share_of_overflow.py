"""Broken fleet: API share over the overflow, not the demand (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(api_share_of_overflow=True)
