"""fleet level 3: a year's plan (`plan_year`): one owned count, rentals month by month.

Any plan passing every check in every month that costs at most 0.5% more than the reference
optimum passes. Cases: a flat year, growth, peaks, a year where owning more than the quietest
month's whole cards is optimal [greedy-trap]; a peak that premium rentals make too expensive (the
blended check binds in one month: own more cards) [peak-blended-binds].
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from lab.exercises.fleet.grading.common import (
    B200_70B,
    COST_SLACK,
    H100_8B,
    PER_CARD,
    make_case,
    month_costs,
    per_card,
    plan_shape,
    random_scenario,
)
from lab.grader.api import Case, Verdict


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _year(cid: str, description: str, demand: list[int],
          scenario: dict[str, Any] | None = None) -> Case:
    case = make_case(3, cid, description, "plan_year", scenario or H100_8B, demand)
    return replace(case, report=True)  # show the cost over the optimum even when it passes


def _curve(rng: random.Random, per_card: int) -> list[int]:
    base = rng.uniform(8, 40) * per_card
    growth = rng.choice([0.0, 0.02, 0.05])
    peaks = rng.sample(range(12), rng.choice([0, 1, 2, 3]))
    return [int(base * (1 + growth) ** m * (rng.uniform(1.3, 1.8) if m in peaks else 1)
                * rng.uniform(0.97, 1.03)) for m in range(12)]


def _fixed() -> list[Case]:
    flat = [500 * 10**9] * 12
    growth = [int(300 * 10**9 * 1.05**m) for m in range(12)]
    peaks = [400 * 10**9] * 12
    peaks[10] = peaks[11] = 640 * 10**9
    trap = [int(PER_CARD * c) for c in (20.3, 21.0, 20.9, 22.5, 21.7, 20.4, 23.0, 22.0, 21.1,
                                        20.6, 22.8, 21.9)]
    spike = [int(PER_CARD * 20.2)] * 12
    spike[6] = int(PER_CARD * 26.2)
    return [
        _year("flat-year", "500B tokens every month", flat),
        _year("growth", "300B tokens growing 5% a month", growth),
        _year("peaks", "400B tokens with a 1.6x peak in November and December", peaks),
        _year("greedy-trap", "owning only the quietest month's whole cards is not optimal",
              trap),
        _year("peak-blended-binds", "a July peak: 6 cards rented at 2.5x cost more than the "
              "blended limit allows that month, so the optimum owns 22 cards",
              spike, {**H100_8B, "card_month_cost": "3300", "rent_premium": "2.5"}),
        _year("b200-70b-growth", "70B on B200s, 60B tokens growing 5% a month",
              [int(60 * 10**9 * 1.05**m) for m in range(12)], B200_70B),
    ]


def _hidden(seed: int) -> list[Case]:
    from lab.reference import fleet as ref

    rng = random.Random(f"fleet/3/{seed}")
    out: list[Case] = []
    while len(out) < 6:
        sc = random_scenario(rng)
        # a card cost under the blended limit at full use, so most years are feasible
        limit = per_card(sc) * float(sc["api_price_per_m"]) * float(sc["max_cost_vs_api"]) / 1e6
        sc["card_month_cost"] = str(int(limit * rng.uniform(0.5, 0.9)))
        demand = _curve(rng, per_card(sc))
        if "infeasible" in ref.plan_year(sc, demand):
            continue  # level 3 promises a feasible year
        out.append(_year(f"hidden-{len(out):02d}", "seeded year with growth and peaks",
                         demand, sc))
    return out


def check(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
    shape = plan_shape(got, len(case.params["demand"]))
    if shape:
        return Verdict(False, f"plan_year: {shape}")
    best, _ = month_costs(case, want["owned"], want["rented"])
    if "infeasible" in got:
        return Verdict(False, f"a plan passes every check every month: {want['owned']} owned "
                              f"(${best:,.2f} for the year); you said infeasible")
    cost, failing = month_costs(case, got["owned"], got["rented"])
    if failing:
        hint = (" — every check must pass in every month, the blended cost included: when a "
                "peak covered by premium rentals costs too much, own more cards"
                if "the blended check fails" in failing else "")
        return Verdict(False, f"your plan ({got['owned']} owned) fails: {failing}{hint}")
    excess = cost / best - 1
    metrics = {"cost_over_optimum": excess}
    if excess > COST_SLACK:
        hint = (" — owning more cards (up to the idle limit in the quietest month) is cheaper "
                "than renting them" if got["owned"] < want["owned"] else "")
        return Verdict(False, f"your year costs ${cost:,.2f} with {got['owned']} owned; the "
                              f"optimum is ${best:,.2f} with {want['owned']} owned "
                              f"({excess:.2%} more; within {COST_SLACK:.1%} passes){hint}",
                       metrics)
    return Verdict(True, f"${cost:,.2f}, {excess:.3%} over the optimum", metrics)

