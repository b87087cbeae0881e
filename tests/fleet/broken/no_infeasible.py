"""Broken fleet: ignores the blended check, never says infeasible (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(no_infeasible=True)
