"""Reference for the `fleet` exercise (same interface as lab/exercises/fleet/stub.py).

Exact arithmetic (fractions.Fraction) so a check that lands exactly on its limit passes. The
month's formulas (`evaluate`) are shared with the fleet sim (`lab/sims/fleet.py`).

Why the planners are optimal: for a fixed number of owned cards N the month's cost as a
function of rented cards r is r·rent + max(0, overflow − r·T)·api (T = tokens per card-month):
linear in r while every rented card is full (r ≤ floor(overflow / T)), then one partial card
(ceil) that empties the API, then strictly rising. The idle check depends on N only, the API-share
check asks r ≥ r_min, the blended check asks cost ≤ a bound. So the cheapest r for N is among
r_min, floor and ceil (clipped to the rental cap); owning more than ceil(demand / T) cards
only adds cost, and more than demand / (T · (1 − max_idle)) fails the idle check. Enumerating
every N from 0 to that bound is therefore exhaustive. A year with
fixed N splits into 12 independent months.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

HOURS_PER_MONTH = 730
SECONDS_PER_HOUR = 3600
PER = 1_000_000  # API prices are per 1M tokens
CHECKS = ("idle", "blended", "api_share")


def exact(value: object, what: str) -> Fraction:
    """A non-negative exact number from an int, a decimal string, a float or a Fraction."""
    if isinstance(value, bool) or not isinstance(value, int | str | float | Fraction):
        raise ValueError(f"{what} must be a number or a decimal string, got {value!r}")
    try:
        out = Fraction(value)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise ValueError(f"{what} is not a finite number: {value!r}") from None
    if out < 0:
        raise ValueError(f"{what} must be non-negative, got {value!r}")
    return out


def tokens_per_card_month(tokens_per_second: Fraction) -> Fraction:
    return tokens_per_second * SECONDS_PER_HOUR * HOURS_PER_MONTH


class Scenario:
    """The scenario's numbers as Fractions (validated once)."""

    def __init__(self, scenario: Mapping[str, Any]) -> None:
        self.per_card = tokens_per_card_month(exact(scenario["tokens_per_second"],
                                                    "tokens_per_second"))
        if self.per_card <= 0:
            raise ValueError("tokens_per_second must be positive")
        self.card_cost = exact(scenario["card_month_cost"], "card_month_cost")
        self.premium = exact(scenario["rent_premium"], "rent_premium")
        self.api_price = exact(scenario["api_price_per_m"], "api_price_per_m")
        if self.api_price <= 0:
            raise ValueError("api_price_per_m must be positive")
        self.max_idle = exact(scenario["max_idle"], "max_idle")
        self.max_cost = exact(scenario["max_cost_vs_api"], "max_cost_vs_api")
        self.max_api = exact(scenario["max_api_share"], "max_api_share")
        cap = scenario.get("max_rented")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ValueError(f"max_rented must be a non-negative int or None, got {cap!r}")
        self.max_rented: int | None = cap

    @property
    def rent_cost(self) -> Fraction:
        return self.card_cost * self.premium


def _demand(value: object) -> Fraction:
    demand = exact(value, "demand")
    if demand <= 0:
        raise ValueError(f"demand must be positive, got {value!r}")
    return demand


def _cards(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int, got {value!r}")
    return value


def evaluate(sc: Scenario, demand: Fraction, owned: int, rented: Fraction) -> dict[str, Any]:
    """One month: who carries the tokens, what it costs, and the three checks with margins."""
    per_card = sc.per_card
    owned_capacity = owned * per_card
    owned_tokens = min(demand, owned_capacity)
    idle_share = (owned_capacity - owned_tokens) / owned_capacity if owned else Fraction(0)
    overflow = demand - owned_tokens
    rented_capacity = rented * per_card
    rented_tokens = min(overflow, rented_capacity)
    api_tokens = overflow - rented_tokens
    owned_cost = owned * sc.card_cost
    rented_cost = rented * sc.rent_cost
    api_cost = api_tokens * sc.api_price / PER
    total = owned_cost + rented_cost + api_cost
    blended = total / demand * PER
    api_share = api_tokens / demand
    margins = {
        "idle": sc.max_idle - idle_share,
        "blended": sc.max_cost * sc.api_price - blended,
        "api_share": sc.max_api - api_share,
    }
    return {
        "tokens_per_card_month": per_card,
        "cards_needed": math.ceil(demand / per_card),
        "owned_capacity": owned_capacity,
        "rented_capacity": rented_capacity,
        "owned_tokens": owned_tokens,
        "rented_tokens": rented_tokens,
        "api_tokens": api_tokens,
        "idle_share": idle_share,
        "api_share": api_share,
        "owned_cost": owned_cost,
        "rented_cost": rented_cost,
        "api_cost": api_cost,
        "total_cost": total,
        "blended_per_m": blended,
        "cost_vs_api": blended / sc.api_price,
        "checks": {name: {"passed": margins[name] >= 0, "margin": margins[name]}
                   for name in CHECKS},
    }


def evaluate_plan(scenario: Mapping[str, Any], demand: int,
                  plan: Mapping[str, Any]) -> dict[str, Any]:
    """Level 1: the figures of one month's plan {"owned": cards, "rented": cards}."""
    return evaluate(Scenario(scenario), _demand(demand), _cards(plan["owned"], "owned"),
                    Fraction(_cards(plan["rented"], "rented")))


# -- planning ----------------------------------------------------------------------------------
def _best_rented(sc: Scenario, demand: Fraction, owned: int) -> tuple[Fraction, int] | None:
    """(cost, rented) of the cheapest rental for `owned` cards that passes the idle and API-share
    checks (ties: fewest rented), or None when no rental does. The blended check is left to the
    caller: it passes exactly when the cost is under a bound."""
    per_card = sc.per_card
    owned_capacity = owned * per_card
    if owned and (owned_capacity - min(demand, owned_capacity)) / owned_capacity > sc.max_idle:
        return None
    overflow = max(Fraction(0), demand - owned_capacity)
    r_min = max(0, math.ceil((overflow - sc.max_api * demand) / per_card))
    r_full = math.ceil(overflow / per_card)
    cap = r_full if sc.max_rented is None else min(r_full, sc.max_rented)
    if r_min > cap:
        return None
    candidates = {r_min, max(r_min, min(cap, math.floor(overflow / per_card))), cap}
    best: tuple[Fraction, int] | None = None
    for r in sorted(candidates):
        api_tokens = max(Fraction(0), overflow - r * per_card)
        cost = owned * sc.card_cost + r * sc.rent_cost + api_tokens * sc.api_price / PER
        if best is None or cost < best[0]:
            best = (cost, r)
    return best


def _owned_bound(sc: Scenario, months: Sequence[Fraction]) -> int:
    """No optimal plan owns more cards: past ceil(demand / T) of the busiest month a card only
    adds cost, and past demand / (T · (1 − max_idle)) of any month that month's idle check
    fails (at or below floor(demand / T) nothing is idle)."""
    bound = max(math.ceil(d / sc.per_card) for d in months)
    if sc.max_idle < 1:
        for d in months:
            idle_ok = math.floor(d / (sc.per_card * (1 - sc.max_idle)))
            bound = min(bound, max(math.floor(d / sc.per_card), idle_ok))
    return bound


def _blended_ok(sc: Scenario, demand: Fraction, cost: Fraction) -> bool:
    return cost / demand * PER <= sc.max_cost * sc.api_price


def cheapest_plan(scenario: Mapping[str, Any], demand: int) -> dict[str, Any]:
    """Level 2: the cheapest whole-card plan passing every check for a flat month.

    Ties: fewest owned, then fewest rented. None passes: {"infeasible": "blended"} when plans
    pass the idle and API-share checks but all cost too much, else {"infeasible": "api_share"}.
    """
    sc = Scenario(scenario)
    d = _demand(demand)
    best: tuple[Fraction, int, int] | None = None
    capacity_ok = False
    for owned in range(_owned_bound(sc, [d]) + 1):
        found = _best_rented(sc, d, owned)
        if found is None:
            continue
        capacity_ok = True
        cost, rented = found
        if _blended_ok(sc, d, cost) and (best is None or cost < best[0]):
            best = (cost, owned, rented)
    if best is None:
        return {"infeasible": "blended" if capacity_ok else "api_share"}
    return {"owned": best[1], "rented": best[2]}


def plan_year(scenario: Mapping[str, Any], demand: Sequence[int]) -> dict[str, Any]:
    """Level 3: owned cards bought once, rentals month by month; cheapest over the year with
    every check passed in every month (ties: fewest owned, then fewest rented each month)."""
    sc = Scenario(scenario)
    months = [_demand(d) for d in demand]
    if not months:
        raise ValueError("demand has no months")
    best: tuple[Fraction, int, list[int]] | None = None
    for owned in range(_owned_bound(sc, months) + 1):
        total, rented = Fraction(0), []
        for d in months:
            found = _best_rented(sc, d, owned)
            if found is None or not _blended_ok(sc, d, found[0]):
                break
            total += found[0]
            rented.append(found[1])
        else:
            if best is None or total < best[0]:
                best = (total, owned, rented)
    if best is None:
        return {"infeasible": "year"}
    return {"owned": best[1], "rented": best[2]}
