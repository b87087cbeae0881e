"""Broken fleet: breaks ties towards more owned cards (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(tie_most_owned=True)
