"""fleet level 2: the cheapest plan for one month (`cheapest_plan`), judged by re-evaluating it.

The learner's plan is re-evaluated with the reference's month formulas and must be the
reference's plan exactly (the tie rule is stated). Boundaries covered (ids in brackets): the
optimum sits exactly at the idle limit [optimum-at-idle-limit]; a tie between plans (renting costs
as much as owning) [tie-*]; a small overflow cheaper on the API than on a card
[api-cheaper-than-a-card]; infeasible because every plan costs too much [infeasible-blended] and
because a rental cap leaves no plan within the API limit [infeasible-api-share]; a rental cap
that forces owning more [rental-cap]; the only plan sits exactly at the blended limit, which float
arithmetic calls infeasible [optimum-at-blended-limit]; a rental cap that binds (the uncapped
optimum rents more) and a plan exactly at the cap [rental-cap-binds, rental-cap-at-need]; a tie
between plans that all pass the API-share check, decided by fewest rented
[tie-api-takes-a-card]; the only plan owns 0 cards [zero-owned-optimal].
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.fleet.grading.common import (
    A100_8B,
    B200_70B,
    B200_AT_LIMIT,
    B200_PER_CARD,
    CHECK_NAMES,
    H100_8B,
    PER_CARD,
    close,
    make_case,
    month_costs,
    per_card,
    plan_shape,
    random_scenario,
    zero_owned,
)
from lab.grader.api import Case, Verdict


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _plan(cid: str, description: str, demand: int, scenario: dict[str, Any] | None = None
          ) -> Case:
    return make_case(2, cid, description, "cheapest_plan", scenario or H100_8B, demand)


def _fixed() -> list[Case]:
    return [
        _plan("flat-default", "500B tokens of 8B chat on H100s", 500 * 10**9),
        _plan("cards-exact", "demand exactly 19 card-months", 19 * PER_CARD),
        _plan("optimum-at-idle-limit", "owning 20 cards leaves exactly 15% idle",
              20 * PER_CARD * 85 // 100),
        _plan("api-cheaper-than-a-card", "5% of a card over 10 cards: the API beats a rental",
              10 * PER_CARD + PER_CARD // 20),
        _plan("tie-rent-equals-own", "rent premium 1: renting costs what owning does",
              7 * PER_CARD, {**H100_8B, "rent_premium": "1"}),
        _plan("tie-own-rent-api", "owning, renting and the API all cost $0.20 per 1M; blended "
              "exactly at a 100% limit", 4 * PER_CARD,
              {**H100_8B, "card_month_cost": "5256", "rent_premium": "1",
               "max_cost_vs_api": "1", "max_idle": "0"}),
        _plan("infeasible-blended", "1B tokens: one card idles, the API costs too much",
              10**9),
        _plan("infeasible-api-share", "no rentals; 1.5 cards of demand: 1 card overflows 33%, "
              "2 cards idle 25%", PER_CARD * 3 // 2, {**H100_8B, "max_rented": 0}),
        _plan("rental-cap", "at most 1 rented card: own the rest", 500 * 10**9,
              {**H100_8B, "max_rented": 1}),
        _plan("rental-cap-binds", "rent premium 1 (ties go to the fewest owned, so renting "
              "wins) and at most 3 rented: the cap binds, 4 owned + exactly 3 rented",
              7 * PER_CARD, {**H100_8B, "rent_premium": "1", "max_rented": 3}),
        _plan("rental-cap-at-need", "rent premium 1 and max_rented 7 for exactly 7 cards of "
              "demand: renting all 7 is at the cap, and allowed", 7 * PER_CARD,
              {**H100_8B, "rent_premium": "1", "max_rented": 7}),
        _plan("rental-cap-none", "max_rented None means no cap (rent premium 1: renting all "
              "7 wins the tie)", 7 * PER_CARD, {**H100_8B, "rent_premium": "1",
                                                "max_rented": None}),
        _plan("tie-api-takes-a-card", "a card costs what the API does and the API may take 30%: "
              "0 owned + 4 rented and 0 owned + 3 rented + a card's worth on the API tie; the "
              "rule picks the fewest rented", 4 * PER_CARD,
              {**H100_8B, "card_month_cost": "5256", "rent_premium": "1", "max_cost_vs_api": "1",
               "max_idle": "0", "max_api_share": "0.3"}),
        _plan("zero-owned-optimal", "half a card of demand: one owned card idles 50%, the API "
              "alone breaks the API-share limit; the only plan owns nothing and rents 1",
              PER_CARD // 2, {**H100_8B, "max_cost_vs_api": "2"}),
        _plan("b200-70b", "100B tokens of 70B on B200s", 100 * 10**9, B200_70B),
        _plan("optimum-at-blended-limit", "12 card-months on B200s at $8,278.20: owning 12 "
              "lands exactly on the blended limit (passes); anything else costs more",
              12 * B200_PER_CARD, B200_AT_LIMIT),
        _plan("used-a100", "500B tokens on used A100s", 500 * 10**9, A100_8B),
    ]


def _hidden(seed: int) -> list[Case]:
    rng = random.Random(f"fleet/2/{seed}")
    out = []
    for i in range(12):
        sc = random_scenario(rng)
        if rng.random() < 0.25:
            sc["max_rented"] = rng.randrange(0, 4)
        demand = rng.randrange(per_card(sc) // 2, 60 * per_card(sc))
        out.append(_plan(f"hidden-{i:02d}", "seeded flat month", demand, sc))
    return out


def _at_limit(case: Case, owned: int, rented: int) -> str:
    """The name of a check the (reference's) month plan meets with margin exactly 0, or ''."""
    from fractions import Fraction

    from lab.reference import fleet as ref

    fig = ref.evaluate(ref.Scenario(case.params["scenario"]), Fraction(case.params["demand"]),
                       owned, Fraction(rented))
    return next((n for n in CHECK_NAMES if fig["checks"][n]["margin"] == 0), "")


def check(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
    shape = plan_shape(got, None)
    if shape:
        return Verdict(False, f"cheapest_plan: {shape}")
    if "infeasible" in want:
        if "infeasible" in got:
            if got["infeasible"] == want["infeasible"]:
                return Verdict(True)
            return Verdict(False, f"infeasible, yes, but the binding check is "
                                  f"{want['infeasible']!r}, not {got['infeasible']!r}")
        _, failing = month_costs(case, got["owned"], [got["rented"]])
        return Verdict(False, f"no plan passes every check (binding: {want['infeasible']}); "
                              f"your plan {got['owned']} owned + {got['rented']} rented does "
                              f"not: {failing or 'it passes?'} — infeasible not detected")
    best, _ = month_costs(case, want["owned"], [want["rented"]])
    if "infeasible" in got:
        at = _at_limit(case, want["owned"], want["rented"])
        return Verdict(False, f"a plan passes every check: {want['owned']} owned + "
                              f"{want['rented']} rented (${best:,.2f}); you said infeasible "
                              f"({got['infeasible']!r})"
                       + (f" — its {at} check is exactly at the limit, which passes: compare "
                          "exactly (fractions.Fraction), floats land a hair over" if at else
                          zero_owned(want, got)))
    cost, failing = month_costs(case, got["owned"], [got["rented"]])
    if failing:
        return Verdict(False, f"your plan {got['owned']} owned + {got['rented']} rented fails: "
                              f"{failing}")
    if got["owned"] == want["owned"] and got["rented"] == want["rented"]:
        return Verdict(True)
    mine = f"{got['owned']} owned + {got['rented']} rented costs ${cost:,.2f}"
    theirs = f"{want['owned']} owned + {want['rented']} rented (${best:,.2f})"
    if close(cost, best):
        rule = ("fewest owned cards, then fewest rented" if got["owned"] != want["owned"] else
                "fewest owned cards, then fewest rented (the API share does not break ties: "
                "any plan passing its check will do)")
        return Verdict(False, f"{mine}, the same as {theirs}: a tie — the rule is {rule}"
                       + zero_owned(want, got))
    return Verdict(False, f"{mine}; {theirs} is cheaper and passes every check — not optimal "
                          "(try every owned count, and let the API take a remainder when that "
                          "is cheaper than a whole rented card)")

