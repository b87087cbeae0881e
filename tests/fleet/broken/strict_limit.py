"""Broken fleet: fails a check exactly at its limit (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(strict_limit=True)
