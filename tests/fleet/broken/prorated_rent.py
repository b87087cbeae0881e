"""Broken fleet: pays a rented card only for the share of it that carried tokens (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(prorated_rent=True)
