"""Broken fleet: counts rented capacity as owned in the idle share (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(rented_as_owned=True)
