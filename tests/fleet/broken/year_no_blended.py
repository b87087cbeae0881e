"""Broken fleet: the year planner checks idle and API share but not the blended cost (level 3)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(year_no_blended=True)
