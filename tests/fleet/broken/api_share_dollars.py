"""Broken fleet: API share as the API's share of the dollars, not of the tokens (level 1)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(api_share_dollars=True)
