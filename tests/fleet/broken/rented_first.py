"""Broken fleet: rented cards serve first and owned cards take the overflow (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(rented_first=True)
