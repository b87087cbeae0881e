"""`scheduler.fsrs_arith` equals `fsrs`'s own `review_card` and `get_card_retrievability`
(through `fsrs_memory.step` and `recall`) bit for bit, over random histories: default and
perturbed weights, retentions 0.70-0.97, every grade, same-day repeats, gaps of hours to
years, moments with microseconds; a one-ulp change of the arithmetic is caught; a scheduler
it does not follow is refused."""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest

from scheduler import fsrs_memory
from scheduler.fsrs_arith import FsrsArith, elapsed_days, ms_of
from tests.scheduler.plan_cases import FSRS_DEFAULTS, FSRS_HIGH, FSRS_LOW

START = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC)


def _weights(rng: random.Random) -> tuple[float, ...] | None:
    if rng.random() < 0.3:
        return None
    return tuple(min(high, max(low, w * rng.uniform(0.5, 1.5)))
                 for w, low, high in zip(FSRS_DEFAULTS, FSRS_LOW, FSRS_HIGH, strict=True))


def _gap(rng: random.Random) -> dt.timedelta:
    kind = rng.random()
    if kind < 0.25:  # same day (FSRS's short-term step), sometimes a hair under a day
        return dt.timedelta(hours=rng.uniform(0, 23.99))
    if kind < 0.3:
        return dt.timedelta(days=1) - dt.timedelta(microseconds=rng.randrange(1, 2000))
    if kind < 0.9:
        return dt.timedelta(days=rng.uniform(1, 60), microseconds=rng.randrange(1000))
    return dt.timedelta(days=rng.uniform(60, 2000))


def mismatches(arith_type: type[FsrsArith], histories: int, seed: int = 0) -> list[str]:
    """Where `arith_type` differs from fsrs_memory's step and recall (each history's first
    difference), over `histories` random histories of up to 12 answers."""
    rng = random.Random(seed)
    out: list[str] = []
    for h in range(histories):
        weights, retention = _weights(rng), round(rng.uniform(0.70, 0.97), 2)
        scheduler = fsrs_memory.make_scheduler(weights, retention)
        arith = arith_type(scheduler)
        memory: fsrs_memory.Memory | None = None
        stability: float | None = None
        difficulty, last_ms = 0.0, 0
        moment = START + dt.timedelta(days=rng.uniform(0, 400))
        for n in range(rng.randrange(1, 13)):
            if memory is not None:
                probe = moment + _gap(rng)  # a recall asked for between answers
                assert stability is not None
                got_r = arith.recall(stability, elapsed_days(ms_of(probe), last_ms))
                want_r = fsrs_memory.recall(memory, probe, scheduler)
                if got_r != want_r:
                    out.append(f"history {h} answer {n}: recall {got_r!r} != {want_r!r}")
                    break
                moment += _gap(rng)
            quality = rng.randrange(6)
            memory, want_days = fsrs_memory.step(memory, quality, moment, scheduler)
            now_ms = ms_of(moment)
            stability, difficulty, got_days = arith.step(
                stability, difficulty, elapsed_days(now_ms, last_ms), quality)
            last_ms = now_ms
            want = (memory.stability, memory.difficulty, want_days)
            if (stability, difficulty, got_days) != want:
                out.append(f"history {h} answer {n} (grade {quality}): "
                           f"{(stability, difficulty, got_days)!r} != {want!r}")
                break
    return out


def test_step_and_recall_equal_fsrs_over_random_histories() -> None:
    assert mismatches(FsrsArith, 400) == []


@pytest.mark.slow
def test_step_and_recall_equal_fsrs_over_many_more_histories() -> None:
    assert mismatches(FsrsArith, 4000, seed=1) == []


class _ExpRecall(FsrsArith):
    """The recall-stability growth with math.exp in place of math.e ** (as close as floats
    get, but not fsrs's operation)."""

    def step(self, stability: float | None, difficulty: float, days: int,
             quality: int) -> tuple[float, float, int]:
        got = super().step(stability, difficulty, days, quality)
        if stability is None or days < 1 or quality < 3:
            return got
        w, r = self._w, (1 + self._factor * days / stability) ** self._decay
        hard, easy = (w[15] if quality == 3 else 1), (w[16] if quality == 5 else 1)
        grown = stability * (1 + self._recall_base * (11 - difficulty) * (stability ** -w[9])
                             * (math.exp((1 - r) * w[10]) - 1) * hard * easy)
        return max(grown, 0.001), got[1], self.interval(max(grown, 0.001))


class _Regrouped(FsrsArith):
    """Recall with the same formula grouped otherwise: F * (t / S) for fsrs's (F * t) / S."""

    def recall(self, stability: float, days: int) -> float:
        return (1 + self._factor * (max(0, days) / stability)) ** self._decay


def test_a_one_ulp_change_of_the_arithmetic_is_caught() -> None:
    found = mismatches(_ExpRecall, 400)
    assert found and "grade" in found[0], found[:1]
    found = mismatches(_Regrouped, 400)
    assert found and "recall" in found[0], found[:1]


def test_elapsed_days_floor_as_fsrs_counts_them() -> None:
    then = dt.datetime(2026, 3, 1, 23, 0, tzinfo=dt.UTC)
    for hours, days in ((0, 0), (23.99, 0), (24, 1), (47.9, 1), (-1, -1), (-24, -1), (-25, -2)):
        now = then + dt.timedelta(hours=hours)
        assert elapsed_days(ms_of(now), ms_of(then)) == days == (now - then).days


def test_a_scheduler_with_learning_steps_or_fuzzing_is_refused() -> None:
    from fsrs import Scheduler

    with pytest.raises(ValueError, match="no fuzzing and no learning or relearning steps"):
        FsrsArith(Scheduler())
    with pytest.raises(ValueError, match="fuzzing=True"):
        FsrsArith(Scheduler(learning_steps=(), relearning_steps=()))
