"""meter has teeth: the reference and an independent solution pass, the stub fails as not
implemented, and every broken implementation fails its level with a message naming the bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.meter.conftest import BROKEN


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2, 3])
def test_reference_passes(tmp_path: Path, level: int) -> None:
    assert_passes("meter", reference_as_solution("meter", tmp_path), level=level, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_independent_solution_agrees_with_the_reference(seed: int) -> None:
    for level in (1, 2, 3):
        assert_passes("meter", BROKEN / "_correct.py", level=level, seed=seed)


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
    ],
)
@pytest.mark.slow
def test_broken_implementation_is_caught(broken: str, level: int, match: str) -> None:
    assert_fails("meter", BROKEN / f"{broken}.py", level, match=match, kind="wrong")
    if level > 1:  # a later level's mistake leaves the earlier levels intact
        assert_passes("meter", BROKEN / f"{broken}.py", level=level - 1)


@pytest.mark.slow
def test_reference_streams_a_million_events_within_the_cap(tmp_path: Path) -> None:
    run = assert_passes("meter", reference_as_solution("meter", tmp_path), level=4, seed=1)
    timed = [e for e in run.events if e["event"] == "metrics"]
    assert timed and "median_ratio" in timed[0]["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize("broken", ["list_everything", "unbounded_seen"])
def test_unbounded_memory_is_stopped(broken: str) -> None:
    assert_fails("meter", BROKEN / f"{broken}.py", 4, match=r"over the sandbox memory cap",
                 kind="memory")


@pytest.mark.slow
def test_slow_stream_fails_the_time_gate() -> None:
    # the 10^6-event case may time out for this solution; the 30 s cap keeps the test short
    assert_fails("meter", BROKEN / "slow.py", 4, match=r"too slow for this level: median_ratio",
                 kind="gate", case_timeout_s=30.0)
