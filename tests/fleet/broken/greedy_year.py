"""Broken fleet: owns the quietest month's whole cards (level 3)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(greedy_year=True)
