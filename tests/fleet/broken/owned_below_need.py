"""Broken fleet: tries owned counts only below the cards needed (range(need)) (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(owned_below_need=True)
