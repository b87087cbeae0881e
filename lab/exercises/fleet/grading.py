"""Grading spec for `fleet` (parent side): fixed boundary cases, seeded hidden scenarios.

Level 1 compares every figure with the reference (relative 1e-9; checks' verdicts exactly) and
names the mistake when a known wrong formula reproduces the answer. Levels 2 and 3 re-evaluate the
learner's plan with the reference's month formulas (imported lazily: this module is also imported
in the sandbox child until the judge runner lands): level 2 wants the reference's plan exactly
(the tie rule is stated), level 3 any plan passing every check in every month that costs at most
0.5% more than the reference optimum.

Boundaries each level covers with a case (ids in brackets):
- Level 1: no owned cards (idle 0) [no-owned]; idle exactly 15% (passes) and one token short of it
  (fails) [idle-at-limit, idle-over-limit]; API share exactly 10% [api-at-limit]; blended exactly
  75% of the API [blended-at-limit]; rented capacity left idle [rented-idle]; demand an exact
  multiple of a card-month and one token over [cards-exact, cards-one-over]; blended exactly at
  the limit where float arithmetic lands a hair over it (B200s at $8,278.20) [blended-at-limit-
  float]; demand 0 and a negative card count raise ValueError [zero-demand, negative-owned,
  negative-rented].
- Level 2: the optimum sits exactly at the idle limit [optimum-at-idle-limit]; a tie between plans
  (renting costs as much as owning) [tie-*]; a small overflow cheaper on the API than on a card
  [api-cheaper-than-a-card]; infeasible because every plan costs too much [infeasible-blended] and
  because a rental cap leaves no plan within the API limit [infeasible-api-share]; a rental cap
  that forces owning more [rental-cap]; the only plan sits exactly at the blended limit, which
  float arithmetic calls infeasible [optimum-at-blended-limit]; a rental cap that binds (the
  uncapped optimum rents more) and a plan exactly at the cap [rental-cap-binds,
  rental-cap-at-need]; a tie between plans that all pass the API-share check, decided by
  fewest rented [tie-api-takes-a-card]; the only plan owns 0 cards [zero-owned-optimal].
- Level 3: a flat year, growth, peaks, a year where owning more than the quietest month's whole
  cards is optimal [greedy-trap]; a peak that premium rentals make too expensive (the blended
  check binds in one month: own more cards) [peak-blended-binds].
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.fleet"
CASE_TIMEOUT_S = 5.0
REL = 1e-9
COST_SLACK = 0.005  # level 3: within 0.5% of the optimum

H100_8B: dict[str, Any] = {
    "tokens_per_second": 10_000, "card_month_cost": "2500", "rent_premium": "1.35",
    "api_price_per_m": "0.20", "max_idle": "0.15", "max_cost_vs_api": "0.75",
    "max_api_share": "0.10",
}
PER_CARD = 10_000 * 3600 * 730  # 26.28B tokens per H100 card-month on the 8B
B200_70B = {**H100_8B, "tokens_per_second": 1680, "card_month_cost": "6000",
            "api_price_per_m": "2.50"}
# $8,278.20 a card-month is exactly 75% of $2.50 per 1M at full use, and float arithmetic puts
# the blended rate a hair over the limit (whichever way the division is ordered)
B200_AT_LIMIT = {**B200_70B, "card_month_cost": "8278.20"}
B200_PER_CARD = 1680 * 3600 * 730
A100_8B = {**H100_8B, "tokens_per_second": 4500, "card_month_cost": "1600"}
SCENARIOS = (H100_8B, B200_70B, A100_8B)
CHECK_NAMES = ("idle", "blended", "api_share")


def _case(level: int, cid: str, description: str, function: str, scenario: dict[str, Any],
          demand: Any, plan: dict[str, Any] | None = None) -> Case:
    params: dict[str, Any] = {"function": function, "scenario": scenario, "demand": demand}
    if plan is not None:
        params["plan"] = plan
    size = len(demand) if isinstance(demand, list) else 1
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S,
                size=size, params=params)


def _eval(cid: str, description: str, demand: int, owned: int, rented: int,
          scenario: dict[str, Any] | None = None) -> Case:
    return _case(1, cid, description, "evaluate_plan", scenario or H100_8B, demand,
                 {"owned": owned, "rented": rented})


# -- level 1 ---------------------------------------------------------------------------------------
def _level1_fixed() -> list[Case]:
    at_limit = 20 * PER_CARD * 85 // 100  # 20 owned cards, exactly 15% idle
    return [
        _eval("default-month", "500B tokens, 18 owned + 2 rented H100s", 500 * 10**9, 18, 2),
        _eval("no-owned", "no owned cards, no rented: everything on the API", 10**11, 0, 0),
        _eval("idle-at-limit", "20 owned cards, demand 85% of them: idle exactly 15%",
              at_limit, 20, 0),
        _eval("idle-over-limit", "one token less: idle just over 15%", at_limit - 1, 20, 0),
        _eval("api-at-limit", "9 owned cards, API exactly 10% of the tokens",
              9 * PER_CARD * 10 // 9, 9, 0),
        _eval("blended-at-limit", "full owned cards at $3,942: blended exactly 75% of $0.20",
              12 * PER_CARD, 12, 0, {**H100_8B, "card_month_cost": "3942"}),
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


def _random_scenario(rng: random.Random) -> dict[str, Any]:
    base = rng.choice(SCENARIOS)
    return {**base, "card_month_cost": str(rng.randrange(1500, 6500, 100)),
            "rent_premium": rng.choice(["1.2", "1.35", "1.5", "2"]),
            "max_idle": rng.choice(["0.1", "0.15", "0.2"]),
            "max_api_share": rng.choice(["0.05", "0.1", "0.2"])}


def _per_card(scenario: dict[str, Any]) -> int:
    return int(scenario["tokens_per_second"]) * 3600 * 730


def _level1_hidden(seed: int) -> list[Case]:
    rng = random.Random(f"fleet/1/{seed}")
    out = []
    for i in range(16):
        sc = _random_scenario(rng)
        demand = rng.randrange(1, 60 * _per_card(sc))
        need = math.ceil(demand / _per_card(sc))
        owned = rng.randrange(0, need + 3)
        rented = rng.randrange(0, max(1, need - owned + 3))
        out.append(_eval(f"hidden-{i:02d}", f"seeded month: {owned} owned, {rented} rented",
                         demand, owned, rented, sc))
    return out


# -- level 2 ---------------------------------------------------------------------------------------
def _plan(cid: str, description: str, demand: int, scenario: dict[str, Any] | None = None
          ) -> Case:
    return _case(2, cid, description, "cheapest_plan", scenario or H100_8B, demand)


def _level2_fixed() -> list[Case]:
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


def _level2_hidden(seed: int) -> list[Case]:
    rng = random.Random(f"fleet/2/{seed}")
    out = []
    for i in range(12):
        sc = _random_scenario(rng)
        if rng.random() < 0.25:
            sc["max_rented"] = rng.randrange(0, 4)
        demand = rng.randrange(_per_card(sc) // 2, 60 * _per_card(sc))
        out.append(_plan(f"hidden-{i:02d}", "seeded flat month", demand, sc))
    return out


# -- level 3 ---------------------------------------------------------------------------------------
def _year(cid: str, description: str, demand: list[int],
          scenario: dict[str, Any] | None = None) -> Case:
    case = _case(3, cid, description, "plan_year", scenario or H100_8B, demand)
    return replace(case, report=True)  # show the cost over the optimum even when it passes


def _curve(rng: random.Random, per_card: int) -> list[int]:
    base = rng.uniform(8, 40) * per_card
    growth = rng.choice([0.0, 0.02, 0.05])
    peaks = rng.sample(range(12), rng.choice([0, 1, 2, 3]))
    return [int(base * (1 + growth) ** m * (rng.uniform(1.3, 1.8) if m in peaks else 1)
                * rng.uniform(0.97, 1.03)) for m in range(12)]


def _level3_fixed() -> list[Case]:
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


def _level3_hidden(seed: int) -> list[Case]:
    from lab.reference import fleet as ref

    rng = random.Random(f"fleet/3/{seed}")
    out: list[Case] = []
    while len(out) < 6:
        sc = _random_scenario(rng)
        # a card cost under the blended limit at full use, so most years are feasible
        limit = _per_card(sc) * float(sc["api_price_per_m"]) * float(sc["max_cost_vs_api"]) / 1e6
        sc["card_month_cost"] = str(int(limit * rng.uniform(0.5, 0.9)))
        demand = _curve(rng, _per_card(sc))
        if "infeasible" in ref.plan_year(sc, demand):
            continue  # level 3 promises a feasible year
        out.append(_year(f"hidden-{len(out):02d}", "seeded year with growth and peaks",
                         demand, sc))
    return out


def cases(level: int, seed: int) -> list[Case]:
    if level == 1:
        return _level1_fixed() + _level1_hidden(seed)
    if level == 2:
        return _level2_fixed() + _level2_hidden(seed)
    if level == 3:
        return _level3_fixed() + _level3_hidden(seed)
    raise ValueError(f"fleet has no level {level}")


# -- checking --------------------------------------------------------------------------------------
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


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-9)


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
            hit = isinstance(got, int | float) and _close(float(got), float(want))
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


def _check_figures(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
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
        if not _close(float(g), float(w)):
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
        if isinstance(m, bool) or not isinstance(m, int | float) or not _close(float(m),
                                                                               w["margin"]):
            why = _explain(case, f"checks.{name}.margin", m)
            return Verdict(False, f"the {name} check's margin: expected {w['margin']:.10g} "
                                  f"(limit − figure), got {m!r}" + (f" — {why}" if why else ""))
    return Verdict(True)


def _month_costs(case: Case, owned: int, rented: list[int]) -> tuple[float, str]:
    """(year cost, '' or the first failing check) of a plan, by the reference's formulas."""
    from fractions import Fraction

    from lab.reference import fleet as ref

    sc = ref.Scenario(case.params["scenario"])
    demand = case.params["demand"]
    months = demand if isinstance(demand, list) else [demand]
    total = Fraction(0)
    for i, (d, r) in enumerate(zip(months, rented, strict=True)):
        fig = ref.evaluate(sc, Fraction(d), owned, Fraction(r))
        total += fig["total_cost"]
        for name in CHECK_NAMES:
            c = fig["checks"][name]
            if not c["passed"]:
                where = f"month {i + 1}: " if isinstance(demand, list) else ""
                figure = {"idle": f"idle {float(fig['idle_share']):.2%}",
                          "blended": f"blended ${float(fig['blended_per_m']):.4f} per 1M",
                          "api_share": f"API share {float(fig['api_share']):.2%}"}[name]
                if sc.max_rented is not None and r > sc.max_rented:
                    return float(total), f"{where}{r} rented cards, over max_rented " \
                                         f"{sc.max_rented}"
                return float(total), f"{where}the {name} check fails ({figure}, margin " \
                                     f"{float(c['margin']):.4g})"
        if sc.max_rented is not None and r > sc.max_rented:
            return float(total), f"{r} rented cards, over max_rented {sc.max_rented}"
    return float(total), ""


def _at_limit(case: Case, owned: int, rented: int) -> str:
    """The name of a check the (reference's) month plan meets with margin exactly 0, or ''."""
    from fractions import Fraction

    from lab.reference import fleet as ref

    fig = ref.evaluate(ref.Scenario(case.params["scenario"]), Fraction(case.params["demand"]),
                       owned, Fraction(rented))
    return next((n for n in CHECK_NAMES if fig["checks"][n]["margin"] == 0), "")


def _plan_shape(got: Any, months: int | None) -> str:
    if not isinstance(got, dict):
        return f"a plan is a dict, got {got!r}"
    if "infeasible" in got:
        return ""
    owned, rented = got.get("owned"), got.get("rented")
    if isinstance(owned, bool) or not isinstance(owned, int) or owned < 0:
        return f"'owned' must be a non-negative int, got {owned!r}"
    if months is None:
        if isinstance(rented, bool) or not isinstance(rented, int) or rented < 0:
            return f"'rented' must be a non-negative int (whole cards), got {rented!r}"
    elif (not isinstance(rented, list) or len(rented) != months
          or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in rented)):
        return f"'rented' must be a list of {months} non-negative ints, got {rented!r}"
    return ""


def _check_plan(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
    shape = _plan_shape(got, None)
    if shape:
        return Verdict(False, f"cheapest_plan: {shape}")
    if "infeasible" in want:
        if "infeasible" in got:
            if got["infeasible"] == want["infeasible"]:
                return Verdict(True)
            return Verdict(False, f"infeasible, yes, but the binding check is "
                                  f"{want['infeasible']!r}, not {got['infeasible']!r}")
        _, failing = _month_costs(case, got["owned"], [got["rented"]])
        return Verdict(False, f"no plan passes every check (binding: {want['infeasible']}); "
                              f"your plan {got['owned']} owned + {got['rented']} rented does "
                              f"not: {failing or 'it passes?'} — infeasible not detected")
    best, _ = _month_costs(case, want["owned"], [want["rented"]])
    if "infeasible" in got:
        at = _at_limit(case, want["owned"], want["rented"])
        return Verdict(False, f"a plan passes every check: {want['owned']} owned + "
                              f"{want['rented']} rented (${best:,.2f}); you said infeasible "
                              f"({got['infeasible']!r})"
                       + (f" — its {at} check is exactly at the limit, which passes: compare "
                          "exactly (fractions.Fraction), floats land a hair over" if at else
                          _zero_owned(want, got)))
    cost, failing = _month_costs(case, got["owned"], [got["rented"]])
    if failing:
        return Verdict(False, f"your plan {got['owned']} owned + {got['rented']} rented fails: "
                              f"{failing}")
    if got["owned"] == want["owned"] and got["rented"] == want["rented"]:
        return Verdict(True)
    mine = f"{got['owned']} owned + {got['rented']} rented costs ${cost:,.2f}"
    theirs = f"{want['owned']} owned + {want['rented']} rented (${best:,.2f})"
    if _close(cost, best):
        rule = ("fewest owned cards, then fewest rented" if got["owned"] != want["owned"] else
                "fewest owned cards, then fewest rented (the API share does not break ties: "
                "any plan passing its check will do)")
        return Verdict(False, f"{mine}, the same as {theirs}: a tie — the rule is {rule}"
                       + _zero_owned(want, got))
    return Verdict(False, f"{mine}; {theirs} is cheaper and passes every check — not optimal "
                          "(try every owned count, and let the API take a remainder when that "
                          "is cheaper than a whole rented card)")


def _zero_owned(want: dict[str, Any], got: dict[str, Any]) -> str:
    """The hint when the optimum owns no card and the answer is what a search starting at 1
    owned card finds (infeasible, or the tie rule's pick from 1 owned up)."""
    return (" — the optimum owns 0 cards: owning none is a plan too, start the search at 0 owned"
            if want.get("owned") == 0 and ("infeasible" in got or got.get("owned") == 1) else "")


def _check_year(case: Case, got: Any, want: dict[str, Any]) -> Verdict:
    shape = _plan_shape(got, len(case.params["demand"]))
    if shape:
        return Verdict(False, f"plan_year: {shape}")
    best, _ = _month_costs(case, want["owned"], want["rented"])
    if "infeasible" in got:
        return Verdict(False, f"a plan passes every check every month: {want['owned']} owned "
                              f"(${best:,.2f} for the year); you said infeasible")
    cost, failing = _month_costs(case, got["owned"], got["rented"])
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


def check(case: Case, got: Any, expected: Any) -> Verdict:
    fn = case.params["function"]
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), but "
                              "returned a result")
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              "valid")
    value, want = got["value"], expected["value"]
    if fn == "evaluate_plan":
        return _check_figures(case, value, want)
    if fn == "cheapest_plan":
        return _check_plan(case, value, want)
    return _check_year(case, value, want)
