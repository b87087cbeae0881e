"""Broken fleet: a card-month of 720 hours (30 days), not 730 (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(hours_720=True)
