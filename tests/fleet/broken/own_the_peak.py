"""Broken fleet: owns enough cards for the peak month (level 3)."""

from _fleetbase import make

evaluate_plan, cheapest_plan, plan_year = make(own_the_peak=True)
