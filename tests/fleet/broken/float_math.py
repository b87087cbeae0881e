"""Broken fleet: float arithmetic instead of exact fractions (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(float_math=True)
