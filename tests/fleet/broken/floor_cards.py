"""Broken fleet: rounds cards_needed down (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(floor_cards=True)
