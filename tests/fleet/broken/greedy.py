"""Broken fleet: owns floor(demand) cards and rents the rest (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(greedy=True)
