"""Broken fleet: the blended margin as max_cost_vs_api - cost_vs_api, not in $ per 1M (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(blended_margin_ratio=True)
