"""Broken fleet: always rents a card for the remainder instead of using the API (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(no_api_for_remainder=True)
