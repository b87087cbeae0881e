"""Broken fleet: max_rented 0 read as 'no cap' (if cap:) (level 2)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(max_rented_falsy=True)
