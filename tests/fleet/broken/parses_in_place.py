"""Broken fleet: parses the scenario's card_month_cost into a Fraction in the caller's dict,
which is read-only (the caller reuses the scenario for the next plan)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(parses_in_place=True)
