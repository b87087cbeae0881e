"""fleet: a procurement planner (see `dojo lab show fleet`).

Edit the bodies below, then run `dojo lab grade fleet` (or `dojo lab watch fleet`).
Checks pass exactly at their limit: compute them exactly (fractions.Fraction, or integers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def evaluate_plan(scenario: Mapping[str, Any], demand: int,
                  plan: Mapping[str, int]) -> dict[str, Any]:
    """Level 1: one month's figures for {"owned": cards, "rented": cards} serving `demand` tokens.

    Returns the figures listed in the statement and "checks": {"idle", "blended", "api_share"},
    each {"passed": bool, "margin": number}. Raise ValueError for demand <= 0 or a negative card
    count.
    """
    raise NotImplementedError("evaluate_plan")


def cheapest_plan(scenario: Mapping[str, Any], demand: int) -> dict[str, Any]:
    """Level 2: {"owned": int, "rented": int} — the cheapest plan passing every check — or
    {"infeasible": "blended" | "api_share"}."""
    raise NotImplementedError("cheapest_plan")


def plan_year(scenario: Mapping[str, Any], demand: Sequence[int]) -> dict[str, Any]:
    """Level 3: {"owned": int, "rented": [12 ints]} — owned cards bought once, rentals by month."""
    raise NotImplementedError("plan_year")
