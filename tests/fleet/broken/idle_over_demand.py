"""Broken fleet: idle share over demand instead of owned capacity (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(idle_over_demand=True)
