"""Broken fleet: names the blended check as binding every time (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(always_blended=True)
