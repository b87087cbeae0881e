"""Broken fleet: rents at the owned price (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(no_premium=True)
