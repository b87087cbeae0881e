"""What fleet's levels share: the scenarios, the case builder, and the month re-evaluation by the
reference's formulas (imported lazily) that levels 2 and 3 judge plans with."""

from __future__ import annotations

import math
import random
from typing import Any

from lab.exercises import untouched
from lab.grader.api import Case, Verdict

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


def make_case(level: int, cid: str, description: str, function: str,
              scenario: dict[str, Any], demand: Any, plan: dict[str, Any] | None = None) -> Case:
    params: dict[str, Any] = {"function": function, "scenario": scenario, "demand": demand}
    if plan is not None:
        params["plan"] = plan
    size = len(demand) if isinstance(demand, list) else 1
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S,
                size=size, params=params)



def random_scenario(rng: random.Random) -> dict[str, Any]:
    base = rng.choice(SCENARIOS)
    return {**base, "card_month_cost": str(rng.randrange(1500, 6500, 100)),
            "rent_premium": rng.choice(["1.2", "1.35", "1.5", "2"]),
            "max_idle": rng.choice(["0.1", "0.15", "0.2"]),
            "max_api_share": rng.choice(["0.05", "0.1", "0.2"])}


def per_card(scenario: dict[str, Any]) -> int:
    return int(scenario["tokens_per_second"]) * 3600 * 730


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-9)


def month_costs(case: Case, owned: int, rented: list[int]) -> tuple[float, str]:
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


def plan_shape(got: Any, months: int | None) -> str:
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


def zero_owned(want: dict[str, Any], got: dict[str, Any]) -> str:
    """The hint when the optimum owns no card and the answer is what a search starting at 1
    owned card finds (infeasible, or the tie rule's pick from 1 owned up)."""
    return (" — the optimum owns 0 cards: owning none is a plan too, start the search at 0 owned"
            if want.get("owned") == 0 and ("infeasible" in got or got.get("owned") == 1) else "")



def raised_verdict(case: Case, got: Any, expected: Any) -> Verdict | None:
    """The verdict when either side raised (or the observation is malformed); None when both
    returned a value, which the case's level then judges."""
    fn = case.params["function"]
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if got.get("touched"):
        return Verdict(False, untouched.message(fn, list(got["touched"])))
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), but "
                              "returned a result")
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              "valid")
    return None
