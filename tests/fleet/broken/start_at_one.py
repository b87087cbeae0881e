"""Broken fleet: the owned-card search starts at 1, so a plan owning no cards is
never found (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(start_at_one=True)
