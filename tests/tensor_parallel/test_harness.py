"""The rank harness: set-up and tear-down wait for every peer, and a rank that never
finishes is blamed on what it was doing - the harness, its own computation, or a collective its
peers skipped - from the progress marks it wrote before its result."""

from __future__ import annotations

import time
import types
from typing import Any

import pytest

from lab.exercises.tensor_parallel.grading.common import Fail, ranks_ok

SOLUTION = types.ModuleType("solution")
SOLUTION.__file__ = __file__


def _hung(rank: int, phase: str, collectives: int) -> dict[str, Any]:
    return {"rank": rank, "pid": 100 + rank, "log": None, "phase": phase,
            "collectives": collectives, "error": ["Hung", "did not finish within 8 s", ""]}


def _done(rank: int, log: list[list[Any]]) -> dict[str, Any]:
    return {"rank": rank, "pid": 100 + rank, "backend": "gloo", "log": log, "value": 0}


@pytest.mark.parametrize("phase", ["set-up", "tear-down"])
def test_a_rank_hung_in_the_harness_is_not_blamed_on_collectives(phase: str) -> None:
    with pytest.raises(Fail, match=rf"rank 1 hung in the harness's {phase} .* not your bug"):
        ranks_ok({"ranks": [_done(0, []), _hung(1, phase, 0)]}, 2)


def test_no_collective_anywhere_means_the_ranks_own_work_ran_too_long() -> None:
    with pytest.raises(Fail, match=r"rank 1 never finished, and no rank called a collective: "
                                   r"its own computation ran past the deadline"):
        ranks_ok({"ranks": [_done(0, []), _hung(1, "learner", 0)]}, 2)


def test_a_collective_one_rank_skipped_is_still_named() -> None:
    with pytest.raises(Fail, match=r"a collective that not every rank calls .* \(rank 0 called "
                                   r"no collective\)"):
        ranks_ok({"ranks": [_done(0, []), _hung(1, "learner", 1)]}, 2)


def _spin(solution: Any, rank: int, world: int, group: Any) -> int:
    if rank == 1:
        while True:
            time.sleep(0.01)
    return rank


def _slow_then_return(solution: Any, rank: int, world: int, group: Any) -> int:
    if rank == 1:
        time.sleep(1.0)  # rank 0 reaches the tear-down long before
    return rank


@pytest.mark.slow
def test_real_ranks_report_where_they_hung() -> None:
    """Through run_ranks: a rank spinning in its own code is marked as in the learner's code
    with no collective called, and the message says so."""
    import torch.distributed  # noqa: F401  (imported before the fork, as in the drive)

    from lab.exercises.tensor_parallel import runtime

    ranks = runtime.run_ranks(SOLUTION, 2, _spin, "cpu", deadline_s=4.0)
    assert ranks[1]["error"][0] == "Hung"
    assert (ranks[1]["phase"], ranks[1]["collectives"]) == ("learner", 0)
    with pytest.raises(Fail, match="no rank called a collective"):
        ranks_ok({"ranks": ranks}, 2)


@pytest.mark.slow
def test_a_fast_rank_waits_for_its_slow_peer_before_leaving() -> None:
    import torch.distributed  # noqa: F401

    from lab.exercises.tensor_parallel import runtime

    ranks = runtime.run_ranks(SOLUTION, 2, _slow_then_return, "cpu", deadline_s=8.0)
    assert [r.get("value") for r in ranks] == [0, 1]
    assert [r["log"] for r in ranks] == [[], []]  # the harness's barriers are not counted


def _raised(rank: int, kind: str, failed_in: str | None, log: list[list[Any]]) -> dict[str, Any]:
    return {"rank": rank, "pid": 100 + rank, "backend": "gloo", "log": log,
            "failed_in": failed_in, "error": [kind, "boom", "line 3, in __init__"]}


def test_the_rank_whose_own_code_raised_is_named_not_the_peer_it_left_waiting() -> None:
    ranks = [_raised(0, "RuntimeError", "all_reduce", [["all_reduce", True, 8]]),
             _raised(1, "KeyError", None, [])]
    with pytest.raises(Fail, match=r"rank 1 raised KeyError \(line 3, in __init__\): boom — "
                                   r"its own code raised, outside any collective; then rank 0 "
                                   r"failed inside all_reduce"):
        ranks_ok({"ranks": ranks}, 2)
    died = {"rank": 0, "pid": 100, "log": None, "error": ["Died", "exited", ""]}
    with pytest.raises(Fail, match=r"rank 1 raised KeyError .* then rank 0 died"):
        ranks_ok({"ranks": [died, _raised(1, "KeyError", None, [])]}, 2)


def test_ranks_that_all_failed_in_collectives_keep_the_collective_message() -> None:
    ranks = [_raised(0, "RuntimeError", "all_reduce", [["all_reduce", True, 8]]),
             _done(1, [])]
    with pytest.raises(Fail, match=r"the ranks called different collectives"):
        ranks_ok({"ranks": ranks}, 2)
