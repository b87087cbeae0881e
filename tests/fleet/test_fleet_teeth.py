"""fleet has teeth: the reference and an independent solution pass, the stub fails as not
implemented, and every broken implementation fails its level with a message naming the bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.fleet.conftest import BROKEN

LEVEL_1 = {"api-over-limit", "blended-over-limit"}  # in-process cases of level 1 (else 2)


@pytest.mark.slow
def test_reference_passes(tmp_path: Path) -> None:
    """Levels 1-3 in one run (one child), each level passed."""
    run = assert_passes("fleet", reference_as_solution("fleet", tmp_path), level=[1, 2, 3], seed=1)
    assert [(lvl.level, lvl.passed) for lvl in run.result.levels] == [(1, True), (2, True),
                                                                       (3, True)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_independent_solution_agrees_with_the_reference(seed: int) -> None:
    run = assert_passes("fleet", BROKEN / "_correct.py", level=[1, 2, 3], seed=seed)
    assert [lvl.level for lvl in run.result.levels] == [1, 2, 3]


def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("fleet", get("fleet").stub_path, 1, match=r"not implemented yet",
                       kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.parametrize(
    ("broken", "level", "match"),
    [
        ("idle_over_demand", 1, r"idle share is idle owned capacity ÷ owned capacity, not ÷ "
                                r"demand"),
        ("rented_as_owned", 1, r"rented capacity left idle is not owned idle"),
        ("floor_cards", 1, r"ceil\(demand / tokens per card-month\), not floor"),
        ("strict_limit", 1, r"exactly at the limit \(margin 0 passes\)"),
        ("no_premium", 1, r"a rented card-month costs card_month_cost × rent_premium"),
        ("api_share_of_overflow", 1, r"API tokens ÷ all the month's tokens, not ÷ the overflow"),
        ("greedy", 2, r"is cheaper and passes every check — not optimal"),
        ("no_infeasible", 2, r"no plan passes every check \(binding: blended\).*infeasible not "
                             r"detected"),
        ("always_blended", 2, r"the binding check is 'api_share', not 'blended'"),
        ("tie_most_owned", 2, r"a tie — the rule is fewest owned cards, then fewest rented"),
        ("no_api_for_remainder", 2, r"let the API take a remainder"),
        ("greedy_year", 3, r"within 0\.5% passes.*owning more cards"),
        ("own_the_peak", 3, r"the idle check fails"),
        ("float_math", 1, r"a float rounding error: .* compute exactly with fractions\.Fraction"),
        ("api_share_dollars", 1, r"api_share: expected 0\.1, got 0\.189"),
        ("blended_margin_ratio", 1, r"the blended check's margin: expected 0\.0465 \(limit − "
                                    r"figure\), got 0\.2325"),
        ("rented_first", 1, r"owned_tokens: expected 4\.7304e\+11, got 4\.4744e\+11"),
        ("prorated_rent", 1, r"rented_cost: expected 6750, got 3462\.3"),
        ("no_rented_check", 1, r"should raise ValueError here \(rented must be a non-negative"),
        ("hours_720", 1, r"tokens_per_card_month: expected 2\.628e\+10, got 2\.592e\+10"),
        ("max_rented_falsy", 2, r"1 rented cards, over max_rented 0 — infeasible not detected"),
        ("owned_below_need", 2, r"19 owned \+ 0 rented \(\$47,500\.00\) is cheaper"),
        ("year_no_blended", 3, r"the blended check fails .* every check must pass in every month, "
                               r"the blended cost included"),
        ("parses_in_place", 1, r"evaluate_plan changed its caller's input in place: "
                               r"scenario\['card_month_cost'\]\. The inputs are read-only"),
        ("parses_in_place", 2, r"cheapest_plan changed its caller's input in place: "
                               r"scenario\['card_month_cost'\]"),
        ("parses_in_place", 3, r"plan_year changed its caller's input in place: "
                               r"scenario\['card_month_cost'\]"),
    ],
)
@pytest.mark.slow
def test_broken_implementation_is_caught(broken: str, level: int, match: str) -> None:
    assert_fails("fleet", BROKEN / f"{broken}.py", level, match=match, kind="wrong")


@pytest.mark.slow
def test_floats_also_fail_the_cheapest_plan_at_the_blended_limit() -> None:
    assert_fails("fleet", BROKEN / "float_math.py", 2, match=r"its blended check is exactly at "
                 r"the limit, which passes", kind="wrong")


@pytest.mark.parametrize(
    ("broken", "case_id", "match"),
    [
        ("cap_ignored", "rental-cap-binds", r"0 owned \+ 7 rented fails: 7 rented cards, over "
                                            r"max_rented 3"),
        ("tie_least_api", "tie-api-takes-a-card", r"a tie — .* then fewest rented \(the API share "
                                                  r"does not break ties"),
        ("start_at_one", "zero-owned-optimal", r"you said infeasible .* owning none is a plan "
                                               r"too, start the search at 0 owned"),
        ("start_at_one", "tie-rent-equals-own", r"1 owned \+ 6 rented .* start the search at 0"),
        ("displayed_shares", "api-over-limit", r"the api_share check: expected passed=False "
                                               r"\(margin -3\.42466e-12\), got passed=True"),
        ("displayed_shares", "blended-over-limit", r"the blended check: expected passed=False "
                                                   r"\(margin -3\.8\d*e-07\), got passed=True"),
        ("parses_in_place", "flat-default", r"cheapest_plan changed its caller's input in place: "
                                            r"scenario\['card_month_cost'\]\. The inputs are "
                                            r"read-only"),
    ],
)
def test_a_contract_gap_bug_fails_its_case_with_its_name(broken: str, case_id: str,
                                                          match: str) -> None:
    """One case in process (level 2, or 1 for LEVEL_1): the reference passes it, the broken
    planner fails it with the rule it missed."""
    import importlib
    import importlib.util
    import re
    import sys

    from lab.exercises.fleet import drive, grading
    from lab.grader.api import RunContext

    level = 1 if case_id in LEVEL_1 else 2
    case = next(c for c in grading.cases(level, 1) if c.id == case_id)
    ctx = RunContext(seed=1)
    want = drive.run(importlib.import_module(grading.REFERENCE), case, ctx)
    assert grading.check(case, want, want).passed
    spec = importlib.util.spec_from_file_location(f"_fleet_{broken}", BROKEN / f"{broken}.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(BROKEN))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BROKEN))
    verdict = grading.check(case, drive.run(module, case, ctx), want)
    assert not verdict.passed and re.search(match, verdict.message), verdict.message
