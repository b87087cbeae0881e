"""FSRS's review step and recall as plain float arithmetic on an `fsrs.Scheduler`'s own
weights: the plan's simulation takes thousands of steps, and `Scheduler.review_card`'s card
copies and datetimes were most of its cost.

Each formula is `fsrs` 6's (scheduler.py: `_initial_stability`, `_initial_difficulty`,
`_short_term_stability`, `_next_forget_stability`, `_next_recall_stability`,
`_next_difficulty`, `_next_interval`, `get_card_retrievability`), with the same operations in
the same order, so the floats are the same bit for bit: `tests/scheduler/test_fsrs_arith.py`
pins `step` and `recall` to `scheduler.fsrs_memory.step` and `recall` (which call
`review_card` and `get_card_retrievability`) over thousands of random histories, and the plan
cache's key digests this file with `fsrs`'s sources. Only the schedulers
`fsrs_memory.make_scheduler` builds are taken: no fuzzing, no learning or relearning steps
(every reviewed card is in the Review state).

Time is whole days elapsed, as FSRS counts it: `elapsed_days` of two moments in
milliseconds (`ms_of`).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING

from scheduler.fsrs_memory import _utc

if TYPE_CHECKING:
    from fsrs import Scheduler

MS_PER_DAY = 86_400_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)
AGAIN, HARD, GOOD, EASY = 1, 2, 3, 4  # fsrs.Rating's values
_RATINGS = (AGAIN, AGAIN, AGAIN, HARD, GOOD, EASY)  # of our grades 0-5 (fsrs_memory.rating)
STABILITY_MIN = 0.001  # fsrs's floor of a stability
MIN_DIFFICULTY, MAX_DIFFICULTY = 1.0, 10.0


def ms_of(moment: dt.datetime) -> int:
    """The moment in whole milliseconds since the epoch, as `fsrs_memory` keeps it (floored;
    naive: local time)."""
    return (_utc(moment) - _EPOCH) // _MS


def elapsed_days(now_ms: int, then_ms: int) -> int:
    """Whole days from `then_ms` to `now_ms`, floored (a `timedelta`'s `.days`)."""
    return (now_ms - then_ms) // MS_PER_DAY


class FsrsArith:
    """One scheduler's weights and constants, read once; `step` and `recall` in floats. What
    depends on the rating alone (a first answer's whole result, the same-day growth, the
    hard/easy factor, the difficulty's move) is computed once per rating, by the same
    expression fsrs evaluates each time: the same floats."""

    __slots__ = ("_bonus", "_decay", "_delta", "_factor", "_first", "_forget_short",
                 "_interval_term", "_kept", "_maximum_interval", "_recall_base", "_reverted",
                 "_short_gain", "_w")

    def __init__(self, scheduler: Scheduler) -> None:
        if scheduler.enable_fuzzing or scheduler.learning_steps or scheduler.relearning_steps:
            raise ValueError("FsrsArith follows a scheduler with no fuzzing and no learning or "
                             "relearning steps (fsrs_memory.make_scheduler's); this one has "
                             f"fuzzing={scheduler.enable_fuzzing}, learning steps "
                             f"{scheduler.learning_steps}, relearning steps "
                             f"{scheduler.relearning_steps}")
        w = self._w = tuple(float(x) for x in scheduler.parameters)
        self._factor = float(scheduler._FACTOR)
        self._decay = float(scheduler._DECAY)
        self._interval_term = float((scheduler.desired_retention ** (1 / self._decay)) - 1)
        self._maximum_interval = int(scheduler.maximum_interval)
        self._forget_short = float(math.e ** (w[17] * w[18]))
        self._recall_base = float(math.e ** (w[8]))
        easy_difficulty = w[4] - (math.e ** (w[5] * (EASY - 1))) + 1
        self._reverted = float(w[7] * easy_difficulty)  # mean reversion's first term
        self._kept = 1 - w[7]  # and the weight of the damped difficulty
        ratings = range(EASY + 1)  # indexed by rating; 0 unused
        self._short_gain = tuple(float(math.e ** (w[17] * (r - 3 + w[18]))) for r in ratings)
        # Recall stability's "* hard_penalty * easy_bonus": times 1 is exact, so one factor.
        self._bonus = tuple(w[15] if r == HARD else w[16] if r == EASY else 1.0
                            for r in ratings)
        self._delta = tuple(float(-(w[6] * (r - 3))) for r in ratings)
        first: list[tuple[float, float, int]] = [(0.0, 0.0, 0)]
        for r in ratings[1:]:
            stability = max(w[r - 1], STABILITY_MIN)
            difficulty = min(max(w[4] - (math.e ** (w[5] * (r - 1))) + 1, MIN_DIFFICULTY),
                             MAX_DIFFICULTY)
            first.append((stability, float(difficulty), self.interval(stability)))
        self._first = tuple(first)

    def recall(self, stability: float, days: int) -> float:
        """Predicted recall `days` whole days after the last review (below 0: as 0)."""
        elapsed = days if days > 0 else 0  # max(0, days): see `step`
        value: float = (1 + self._factor * elapsed / stability) ** self._decay
        return value

    def interval(self, stability: float) -> int:
        """Days until recall falls to the desired retention (1 to the maximum interval)."""
        days: int = round((stability / self._factor) * self._interval_term)
        days = 1 if days < 1 else days  # max(days, 1): see `step`
        return self._maximum_interval if self._maximum_interval < days else days

    def step(self, stability: float | None, difficulty: float, days: int,
             quality: int) -> tuple[float, float, int]:
        """(stability, difficulty, days to the next review) after an answer graded `quality`
        (0-5) `days` whole days after the last one; `stability` None: the card's first answer
        (`difficulty` and `days` unused). fsrs's `max(a, b)` and `min(a, b)` are written out
        as `b if a < b else a` and `b if a > b else a` (what the builtins return for two
        arguments, NaN included), which skip a call each."""
        rating = _RATINGS[quality] if 0 <= quality <= 5 else AGAIN if quality < 0 else EASY
        if stability is None:
            return self._first[rating]
        w = self._w
        if days < 1:
            increase = self._short_gain[rating] * (stability ** -w[19])
            if rating != AGAIN:
                increase = 1.0 if increase < 1.0 else increase
            stability = stability * increase
        else:
            r = (1 + self._factor * days / stability) ** self._decay
            if rating == AGAIN:
                long_term = (w[11] * (difficulty ** -w[12]) * (((stability + 1) ** (w[13])) - 1)
                             * (math.e ** ((1 - r) * w[14])))
                short_term = stability / self._forget_short
                stability = short_term if short_term < long_term else long_term
            else:
                stability = stability * (
                    1 + self._recall_base * (11 - difficulty) * (stability ** -w[9])
                    * ((math.e ** ((1 - r) * w[10])) - 1) * self._bonus[rating])
        stability = STABILITY_MIN if stability < STABILITY_MIN else stability
        reverted = self._reverted + self._kept * (
            difficulty + (10.0 - difficulty) * self._delta[rating] / 9.0)
        difficulty = MIN_DIFFICULTY if reverted < MIN_DIFFICULTY else reverted
        difficulty = MAX_DIFFICULTY if difficulty > MAX_DIFFICULTY else difficulty
        return stability, difficulty, self.interval(stability)
