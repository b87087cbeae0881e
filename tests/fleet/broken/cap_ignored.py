"""Broken fleet: the planner never applies max_rented, so a cap that binds is
broken (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(cap_ignored=True)
