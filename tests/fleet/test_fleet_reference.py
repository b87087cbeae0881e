"""The fleet reference is exact at the limits and its planners are optimal: checked against a
brute force over every whole-card plan on small seeded scenarios."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import pytest

from lab.exercises.fleet import grading
from lab.exercises.fleet.grading import common
from lab.reference import fleet


def _brute_year(sc: dict[str, Any], demand: list[int]) -> dict[str, Any]:
    """Every owned count and every rental up to two cards past the need, month by month."""
    s = fleet.Scenario(sc)
    best: tuple[Fraction, int, list[int]] | None = None
    for owned in range(max(math.ceil(Fraction(d) / s.per_card) for d in demand) + 3):
        total, rented = Fraction(0), []
        for d in demand:
            found: tuple[Fraction, int] | None = None
            for r in range(math.ceil(Fraction(d) / s.per_card) + 3):
                if s.max_rented is not None and r > s.max_rented:
                    break
                month = fleet.evaluate(s, Fraction(d), owned, Fraction(r))
                if all(c["passed"] for c in month["checks"].values()) and (
                        found is None or month["total_cost"] < found[0]):
                    found = (month["total_cost"], r)
            if found is None:
                break
            total += found[0]
            rented.append(found[1])
        else:
            if best is None or total < best[0]:
                best = (total, owned, rented)
    return {"infeasible": "year"} if best is None else {"owned": best[1], "rented": best[2]}


@pytest.mark.slow
def test_planners_match_a_brute_force() -> None:
    rng = random.Random(2026)
    for _ in range(40):
        sc = common.random_scenario(rng)
        if rng.random() < 0.3:
            sc["max_rented"] = rng.randrange(0, 4)
        per_card = common.per_card(sc)
        demand = [rng.randrange(per_card // 3, 9 * per_card) for _ in range(rng.choice([1, 3]))]
        brute = _brute_year(sc, demand)
        assert fleet.plan_year(sc, demand) == brute
        if len(demand) == 1:
            plan = fleet.cheapest_plan(sc, demand[0])
            if "infeasible" in brute:
                assert "infeasible" in plan
            else:
                assert plan == {"owned": brute["owned"], "rented": brute["rented"][0]}


def test_checks_pass_exactly_at_their_limits() -> None:
    by_id = {c.id: c for c in grading.cases(1, 0)}
    for cid, name in (("idle-at-limit", "idle"), ("api-at-limit", "api_share"),
                      ("blended-at-limit", "blended")):
        p = by_id[cid].params
        month = fleet.evaluate_plan(p["scenario"], p["demand"], p["plan"])
        assert month["checks"][name] == {"passed": True, "margin": 0}, cid
    p = by_id["idle-over-limit"].params
    assert not fleet.evaluate_plan(p["scenario"], p["demand"], p["plan"])["checks"]["idle"][
        "passed"]


def test_default_month_matches_the_sim() -> None:
    from lab.sims import SIMS

    r = SIMS["fleet"].evaluate()  # 500B tokens, 18 owned H100s, overflow rented by the hour
    s = fleet.Scenario(common.H100_8B)
    rented = (Fraction(500 * 10**9) - 18 * s.per_card) / s.per_card
    month = fleet.evaluate(s, Fraction(500 * 10**9), 18, rented)
    # the sim's dials are floats (1.35 is not exactly 135/100), hence approx
    assert r.value("total_cost") == pytest.approx(float(month["total_cost"]), rel=1e-12)
    assert r.value("blended_per_m") == pytest.approx(float(month["blended_per_m"]), rel=1e-12)
    assert r.check("blended").margin == pytest.approx(
        float(month["checks"]["blended"]["margin"]), rel=1e-9)
