"""meter has teeth: the reference and an independent solution pass, the stub fails as not
implemented, and every broken implementation fails its level with a message naming the bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import (
    assert_fails,
    assert_passes,
    only_cases,
    reference_as_solution,
)
from tests.meter.conftest import BROKEN


@pytest.mark.slow
def test_reference_passes(tmp_path: Path) -> None:
    """Levels 1-3 in one run (one child), each level passed."""
    run = assert_passes("meter", reference_as_solution("meter", tmp_path), level=[1, 2, 3], seed=1)
    assert [(lvl.level, lvl.passed) for lvl in run.result.levels] == [(1, True), (2, True),
                                                                       (3, True)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_independent_solution_agrees_with_the_reference(seed: int) -> None:
    run = assert_passes("meter", BROKEN / "_correct.py", level=[1, 2, 3], seed=seed)
    assert [lvl.level for lvl in run.result.levels] == [1, 2, 3]


def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("meter", get("meter").stub_path, 1, match=r"not implemented yet",
                       kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.parametrize(
    ("broken", "level", "match"),
    [
        ("float_money", 1, r"got the float .* use decimal\.Decimal, never float"),
        ("cached_free", 1, r"cached prompt tokens are not free"),
        ("half_even", 1, r"round half up \(ROUND_HALF_UP\): \$0\.025 is \$0\.03"),
        ("round_each_event", 1, r"round once, at the end|do not round a single request"),
        ("blended_fresh_only", 1, r"the blended rate divides by every token moved"),
        ("retry_once", 2, r"a retry .* is a new attempt billed in full, not a duplicate"),
        ("dup_twice", 2, r"a redelivered event \(same request_id and attempt\) must be billed "
                         r"once"),
        ("received_month", 2, r"UTC month of its ts .* not of received_ts"),
        ("retry_share_swapped", 2, r"retry_spend_increase = retries ÷ first attempts"),
        ("untagged_ge", 3, r"untagged_ok: expected True, got False — .* exactly 10% passes"),
        ("empty_tag_tenant", 3, r"an empty tenant tag \(''\) is untagged"),
        ("chargeback_full", 3, r"split in half: the reader pays the owner half"),
        ("untagged_rounded_share", 3, r"untagged_ok: expected False, got True — the check "
                                      r"compares the exact dollars"),
        ("empty_owner_credited", 3, r"chargeback has unexpected entries \[''\]"),
        ("reader_raw_tag", 3, r"chargeback has unexpected entries \[''\] \(expected keys "
                              r"\['ads'\]\)"),
        ("half_up_floor", 3, r"chargeback\.support: expected -0\.14, got -0\.13 — ROUND_HALF_UP "
                             r"rounds a half away from zero"),
        ("transfer_before_dedup", 3, r"chargeback\.ads: expected 11\.29, got 24\.79 — a "
                                     r"redelivered event is dropped before anything is counted"),
        ("sum_rounded_lines", 1, r"tiers\.fast\.total: expected 0\.07, got 0\.08"),
        ("blended_rounded_total", 1, r"blended_per_m is rounded from the exact total"),
        ("retry_first_month", 2, r"ledger\.months\.2026-02 is missing"),
        ("discount_at_fraction", 1, r"cached_discount: expected 0\.0054, got 0\.0006"),
    ],
)
@pytest.mark.slow
def test_broken_implementation_is_caught(broken: str, level: int, match: str) -> None:
    # a later level's mistake leaves the level before it intact (graded in the same run)
    assert_fails("meter", BROKEN / f"{broken}.py", level, match=match, kind="wrong",
                 intact=(level - 1,) if level > 1 else ())


@pytest.mark.slow
def test_reference_streams_a_million_events_within_the_cap(tmp_path: Path) -> None:
    run = assert_passes("meter", reference_as_solution("meter", tmp_path), level=4, seed=1)
    timed = [e for e in run.events if e["event"] == "metrics"]
    assert [e["case"] for e in timed] == ["million-events"]
    assert "median_ratio" in timed[0]["metrics"] and "cpu_median_ratio" in timed[0]["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize("broken", ["list_everything", "unbounded_seen"])
def test_unbounded_memory_is_stopped(broken: str) -> None:
    assert_fails("meter", BROKEN / f"{broken}.py", 4, match=r"over the sandbox memory cap",
                 kind="memory")


@pytest.mark.slow
def test_a_ledger_pricing_every_event_in_decimal_passes_the_time_gate() -> None:
    """The tests' correct ledger prices each event in Decimal as it comes: 3.8-4.8x the
    reference in the grader (CPU 3.9-4.1x, load 7-9), which the old 4x and 8x gates passed with
    too little to spare on a loaded machine; the 12x gate passes it with 2.5x or more."""
    assert_passes("meter", BROKEN / "_correct.py", level=4, seed=1)


@pytest.mark.slow
def test_a_window_searched_with_in_fails_the_time_gate() -> None:
    # ~10^4 comparisons per event, ~160x the reference: stopped once it has run 12x as long as
    # the reference's pass beside it. The empty stream first (a passed case: the reference then
    # runs beside the timed one); the 12,000-event case would time it out first.
    run = assert_fails(only_cases("meter", "empty-stream", "million-events"),
                       BROKEN / "window_scan.py", 4, match=r"too slow for this level: "
                       r"stopped after .* over 12× the reference's", kind="gate")
    assert [f["case"] for f in run.failures] == ["million-events"]


@pytest.mark.slow
def test_a_window_one_event_short_bills_the_latest_redelivery_twice() -> None:
    """The far-redelivery case alone, in process (grading all of level 4 streams 10^6 events)."""
    import importlib
    import importlib.util
    import sys

    from lab.exercises.meter import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(4, 1) if c.id == "far-redelivery")
    ctx = RunContext(seed=1)
    want = grading.expected(case, ctx)
    reference = importlib.import_module(grading.REFERENCE)
    assert grading.check(case, drive.run(reference, case, ctx), want).passed
    spec = importlib.util.spec_from_file_location("_window_short", BROKEN / "window_short.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(BROKEN))
    try:
        broken = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(broken)
    finally:
        sys.path.remove(str(BROKEN))
    verdict = grading.check(case, drive.run(broken, case, ctx), want)
    assert not verdict.passed
    assert "remember each (request_id, attempt) for the 10,000 events" in verdict.message


def _in_process(broken: str, level: int, case_id: str, seed: int = 1) -> tuple[bool, str]:
    """One case of `level`, graded in process: (the reference passes it, the broken message)."""
    import importlib
    import importlib.util
    import sys

    from lab.exercises.meter import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(level, seed) if c.id == case_id)
    ctx = RunContext(seed=seed)
    want = grading.expected(case, ctx)
    ok = grading.check(case, drive.run(importlib.import_module(grading.REFERENCE), case, ctx),
                       want).passed
    spec = importlib.util.spec_from_file_location(f"_meter_{broken}", BROKEN / f"{broken}.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(BROKEN))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BROKEN))
    verdict = grading.check(case, drive.run(module, case, ctx), want)
    return ok, "" if verdict.passed else verdict.message


@pytest.mark.parametrize(
    ("broken", "level", "case_id", "match"),
    [
        ("retry_by_arrival", 2, "retry-before-first", r"first_attempts: .* recognised by its "
                                                      r"attempt number .* not by arriving after"),
        ("retry_by_arrival", 2, "retry-alone", r"recognised by its attempt number"),
        ("dup_key_tenant", 2, "duplicate-retagged", r"the key is those two fields"),
        ("window_1000", 2, "duplicate-far", r"remember each \(request_id, attempt\) for the "
                                            r"10,000 events"),
        ("untagged_cents", 3, "untagged-just-over", r"untagged_ok: expected False, got True — "
                                                    r"the check compares the exact dollars .* "
                                                    r"not amounts rounded to the cent"),
        # the caller's inputs are read-only, checked on every untimed call
        ("marks_billed", 1, "request-cached-prefix", r"bill_request changed its caller's "
                                                     r"input in place: event\. The inputs are "
                                                     r"read-only"),
        ("marks_billed", 1, "one-request", r"ledger changed its caller's input in place: "
                                           r"events\[0\]\. The inputs are read-only"),
        ("marks_billed", 4, "far-redelivery", r"ledger changed its caller's input in place: "
                                              r"events\[0\], events\[1\], .* The inputs are "
                                              r"read-only"),
    ],
)
def test_a_contract_gap_bug_fails_its_case_with_its_name(broken: str, level: int, case_id: str,
                                                          match: str) -> None:
    import re

    ok, message = _in_process(broken, level, case_id)
    assert ok, f"the reference fails {case_id}"
    assert re.search(match, message), message
