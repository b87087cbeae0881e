"""fleet level 1: one month's figures and checks for a given plan (`evaluate_plan`).

Every figure is compared with the reference (relative 1e-9; checks' verdicts exactly), and a known
wrong formula that reproduces the answer is named. Boundaries covered (ids in brackets): no owned
cards (idle 0) [no-owned]; idle exactly 15% (passes) and one token short of it (fails)
[idle-at-limit, idle-over-limit]; API share exactly 10% and one token over [api-at-limit,
api-over-limit]; blended exactly 75% of the API and one cent per card over [blended-at-limit,
blended-over-limit]; rented capacity left idle [rented-idle]; demand an exact multiple of a
card-month and one token over [cards-exact, cards-one-over]; blended exactly at the limit where
float arithmetic lands a hair over it (B200s at $8,278.20) [blended-at-limit-float]; demand 0 and
a negative card count raise ValueError [zero-demand, negative-owned, negative-rented].
"""

from __future__ import annotations

import math
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
    per_card,
    random_scenario,
)
from lab.grader.api import Case, Verdict


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _eval(cid: str, description: str, demand: int, owned: int, rented: int,
          scenario: dict[str, Any] | None = None) -> Case:
    return make_case(1, cid, description, "evaluate_plan", scenario or H100_8B, demand,
                     {"owned": owned, "rented": rented})


def _fixed() -> list[Case]:
    at_limit = 20 * PER_CARD * 85 // 100  # 20 owned cards, exactly 15% idle
    return [
        _eval("default-month", "500B tokens, 18 owned + 2 rented H100s", 500 * 10**9, 18, 2),
        _eval("no-owned", "no owned cards, no rented: everything on the API", 10**11, 0, 0),
        _eval("idle-at-limit", "20 owned cards, demand 85% of them: idle exactly 15%",
              at_limit, 20, 0),
        _eval("idle-over-limit", "one token less: idle just over 15%", at_limit - 1, 20, 0),
        _eval("api-at-limit", "9 owned cards, API exactly 10% of the tokens",
              9 * PER_CARD * 10 // 9, 9, 0),
        _eval("api-over-limit", "one token more: the API carries a hair over 10% (fails)",
              9 * PER_CARD * 10 // 9 + 1, 9, 0),
        _eval("blended-at-limit", "full owned cards at $3,942: blended exactly 75% of $0.20",
              12 * PER_CARD, 12, 0, {**H100_8B, "card_month_cost": "3942"}),
        _eval("blended-over-limit", "one cent more per card ($3,942.01): blended a hair over "
              "75% of $0.20 (fails)", 12 * PER_CARD, 12, 0,
              {**H100_8B, "card_month_cost": "3942.01"}),
        _eval("rented-idle", "3 rented cards for 1.2 cards of overflow: rented idle is not "
              "owned idle", 10 * PER_CARD + PER_CARD * 6 // 5, 10, 3),
        _eval("cards-exact", "demand exactly 19 card-months", 19 * PER_CARD, 19, 0),
        _eval("cards-one-over", "one token more than 19 card-months", 19 * PER_CARD + 1, 19, 1),
        _eval("b200-70b", "70B on B200s: 1,680 tok/s, $6,000, API $2.50", 100 * 10**9, 22, 1,
              B200_70B),
        _eval("used-a100", "the used-chip bargain: 19 A100s at 0.45x", 500 * 10**9, 19, 24,
              A100_8B),
        _eval("blended-at-limit-float", "12 full B200s at $8,278.20: blended exactly 75% of "
              "$2.50 (floats land a hair over)", 12 * B200_PER_CARD, 12, 0, B200_AT_LIMIT),
        _eval("zero-demand", "demand 0 is invalid", 0, 1, 0),
        _eval("negative-demand", "demand -1 is invalid", -1, 1, 0),
        _eval("one-token-demand", "demand of 1 token (the smallest valid): one card needed, "
              "its capacity all but idle", 1, 1, 0),
        _eval("negative-owned", "owned -1 is invalid", 10**9, -1, 0),
        _eval("negative-rented", "rented -1 is invalid", 10**9, 1, -1),
    ]


def _hidden(seed: int) -> list[Case]:
    rng = random.Random(f"fleet/1/{seed}")
    out = []
    for i in range(16):
        sc = random_scenario(rng)
        demand = rng.randrange(1, 60 * per_card(sc))
        need = math.ceil(demand / per_card(sc))
        owned = rng.randrange(0, need + 3)
        rented = rng.randrange(0, max(1, need - owned + 3))
        out.append(_eval(f"hidden-{i:02d}", f"seeded month: {owned} owned, {rented} rented",
                         demand, owned, rented, sc))
    return out


FIGURES = ("tokens_per_card_month", "cards_needed", "owned_capacity", "rented_capacity",
           "owned_tokens", "rented_tokens", "api_tokens", "idle_share", "api_share",
           "owned_cost", "rented_cost", "api_cost", "total_cost", "blended_per_m", "cost_vs_api")

L1_BUGS: dict[str, str] = {  # strict_limit first: it explains a wrong verdict best
    "strict_limit": "a check passes when its figure is exactly at the limit (margin 0 passes): "
                    "compare exactly, e.g. with fractions.Fraction",
    "floor_cards": "cards_needed is a whole number of cards that carries the demand: "
                   "ceil(demand / tokens per card-month), not floor",
    "idle_over_demand": "idle share is idle owned capacity ÷ owned capacity, not ÷ demand",
    "rented_as_owned": "the idle check is about owned cards only: rented capacity left idle is "
                       "not owned idle (rented counted as owned)",
    "no_premium": "a rented card-month costs card_month_cost × rent_premium",
    "api_share_of_overflow": "the API share is API tokens ÷ all the month's tokens, not ÷ the "
                             "overflow",
}


def _variants(case: Case) -> dict[str, dict[str, Any]]:
    """The level-1 answer under each known mistake (figures as floats)."""
    from fractions import Fraction

    from lab.reference import fleet as ref

    p = case.params
    sc = ref.Scenario(p["scenario"])
    demand = Fraction(p["demand"])
    owned, rented = p["plan"]["owned"], Fraction(p["plan"]["rented"])
    right = ref.evaluate(sc, demand, owned, rented)
    out: dict[str, dict[str, Any]] = {}
    for bug in L1_BUGS:
        v = dict(right)
        checks = {k: dict(c) for k, c in right["checks"].items()}
        if bug == "floor_cards":
            v["cards_needed"] = math.floor(demand / sc.per_card)
        elif bug == "idle_over_demand":
            idle = right["owned_capacity"] - right["owned_tokens"]
            v["idle_share"] = idle / demand
        elif bug == "rented_as_owned":
            capacity = right["owned_capacity"] + right["rented_capacity"]
            busy = right["owned_tokens"] + right["rented_tokens"]
            v["idle_share"] = (capacity - busy) / capacity if capacity else Fraction(0)
        elif bug == "no_premium":
            v["rented_cost"] = rented * sc.card_cost
            v["total_cost"] = v["owned_cost"] + v["rented_cost"] + v["api_cost"]
            v["blended_per_m"] = v["total_cost"] / demand * ref.PER
            v["cost_vs_api"] = v["blended_per_m"] / sc.api_price
            checks["blended"]["margin"] = sc.max_cost * sc.api_price - v["blended_per_m"]
        elif bug == "api_share_of_overflow":
            overflow = right["rented_tokens"] + right["api_tokens"]
            v["api_share"] = right["api_tokens"] / overflow if overflow else Fraction(0)
            checks["api_share"]["margin"] = sc.max_api - v["api_share"]
        if bug in ("idle_over_demand", "rented_as_owned"):
            checks["idle"]["margin"] = sc.max_idle - v["idle_share"]
        for c in checks.values():
            c["passed"] = c["margin"] > 0 if bug == "strict_limit" else c["margin"] >= 0
        v["checks"] = checks
        out[bug] = {k: (float(x) if isinstance(x, Fraction) else x) for k, x in v.items()}
        out[bug]["checks"] = {k: {"passed": c["passed"], "margin": float(c["margin"])}
                              for k, c in checks.items()}
    return out


def _explain(case: Case, key: str, got: Any) -> str:
    try:
        variants = _variants(case)
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return ""
    for bug, v in variants.items():
        path = key.split(".")
        want: Any = v
        for part in path:
            want = want.get(part) if isinstance(want, dict) else None
        if want is None or isinstance(got, dict):
            continue
        if isinstance(want, bool) or isinstance(got, bool):
            hit = want is got
        else:
            hit = isinstance(got, int | float) and close(float(got), float(want))
        if hit:
            return L1_BUGS[bug]
    return ""


def _float_margin(got: Any, want: float) -> str:
    """A margin that should be exactly 0 came back as a rounding error's worth off."""
    if want != 0 or isinstance(got, bool) or not isinstance(got, int | float) or got == 0:
        return ""
    if abs(got) > 1e-9:
        return ""
    return (f"your margin is {got!r}, a float rounding error: the exact figure is at the limit "
            "(margin 0), and a check exactly at its limit passes — compute exactly with "
            "fractions.Fraction (floats make this boundary fail)")


def check(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
    if not isinstance(got, dict):
        return Verdict(False, f"evaluate_plan must return a dict of figures, got {got!r}")
    for key in FIGURES:
        if key not in got:
            return Verdict(False, f"evaluate_plan: the figure {key!r} is missing")
        g, w = got[key], want[key]
        if isinstance(g, bool) or not isinstance(g, int | float):
            return Verdict(False, f"{key}: expected a number ({w:g}), got {g!r}")
        if key == "cards_needed" and (not isinstance(g, int) or g != w):
            why = _explain(case, key, g)
            return Verdict(False, f"cards_needed: expected the int {w}, got {g!r}"
                                  + (f" — {why}" if why else ""))
        if not close(float(g), float(w)):
            why = _explain(case, key, g)
            return Verdict(False, f"{key}: expected {w:.10g}, got {g:.10g}"
                                  + (f" — {why}" if why else ""))
    checks = got.get("checks")
    if not isinstance(checks, dict):
        return Verdict(False, f"evaluate_plan: 'checks' must be a dict, got {checks!r}")
    for name in CHECK_NAMES:
        c, w = checks.get(name), want["checks"][name]
        if not isinstance(c, dict) or "passed" not in c or "margin" not in c:
            return Verdict(False, f"checks[{name!r}] must be a dict with 'passed' and 'margin', "
                                  f"got {c!r}")
        if c["passed"] is not w["passed"]:
            why = _float_margin(c.get("margin"), w["margin"]) or _explain(
                case, f"checks.{name}.passed", c["passed"])
            return Verdict(False, f"the {name} check: expected passed={w['passed']} (margin "
                                  f"{w['margin']:.6g}), got passed={c['passed']!r}"
                                  + (f" — {why}" if why else ""))
        m = c["margin"]
        if isinstance(m, bool) or not isinstance(m, int | float) or not close(float(m),
                                                                              w["margin"]):
            why = _explain(case, f"checks.{name}.margin", m)
            return Verdict(False, f"the {name} check's margin: expected {w['margin']:.10g} "
                                  f"(limit − figure), got {m!r}" + (f" — {why}" if why else ""))
    return Verdict(True)

