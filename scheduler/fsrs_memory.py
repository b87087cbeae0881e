"""A card's FSRS memory state (stability, difficulty, last review) and the one step that
moves it: what readiness, scheduler=fsrs and the plan's simulation all read.

The state is what the `fsrs` package's `Card` holds once it has been reviewed (no learning
steps: every reviewed card is in the Review state), so one answer moves it by one
`Scheduler.review_card` call. Answers count in **time** order: `replay` sorts them, so a log
imported out of order gives the state a sorted log gives. Every answer counts (re-drills and
cram are memory events too; same-day repeats are reviews with 0 elapsed days).

`fsrs` is imported inside the functions: the TUI and `dojo --help` must not pay for it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsrs import Card as FsrsCard
    from fsrs import Rating, Scheduler

DEFAULT_RETENTION = 0.90
RETENTION_RANGE = (0.70, 0.97)


@dataclass(frozen=True)
class Memory:
    """FSRS memory of one card: stability S (days until recall falls to 90%), difficulty D
    (1-10) and the moment (UTC) of the answer that set them."""

    stability: float
    difficulty: float
    last_review: dt.datetime


@functools.cache
def _fsrs() -> tuple[type[FsrsCard], Any, tuple[Rating, ...]]:
    """`fsrs`'s Card class, its Review state and the rating of each grade 0-5, looked up once
    (the plan's simulation steps thousands of cards)."""
    from fsrs import Card, Rating, State

    again, hard, good, easy = Rating.Again, Rating.Hard, Rating.Good, Rating.Easy
    return Card, State.Review, (again, again, again, hard, good, easy)


def rating(quality: int) -> Rating:
    """Our 0-5 grade as an FSRS rating: 0-2 Again, 3 Hard, 4 Good, 5 Easy (below 0: Again,
    above 5: Easy)."""
    ratings = _fsrs()[2]
    return ratings[min(max(quality, 0), 5)]


def make_scheduler(parameters: Sequence[float] | None = None,
                   desired_retention: float = DEFAULT_RETENTION) -> Scheduler:
    """An FSRS scheduler: no fuzzing, no learning steps, given or default weights (cached:
    building one validates the 21 weights, which an answer should not pay for each time)."""
    return _scheduler(None if parameters is None else tuple(float(w) for w in parameters),
                      float(desired_retention))


@functools.lru_cache(maxsize=8)
def _scheduler(parameters: tuple[float, ...] | None, desired_retention: float) -> Scheduler:
    from fsrs import Scheduler

    options: dict[str, Any] = {"enable_fuzzing": False, "learning_steps": (),
                               "relearning_steps": (), "desired_retention": desired_retention}
    if parameters is not None:
        options["parameters"] = parameters
    return Scheduler(**options)


def _utc(moment: dt.datetime) -> dt.datetime:
    """UTC, to the millisecond the log keeps (floored, as `days.to_ms` does): a stepped memory
    equals a replayed one."""
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive: local time, as `days.to_ms` reads it
    utc = moment if moment.tzinfo is dt.UTC else moment.astimezone(dt.UTC)
    extra = utc.microsecond % 1000
    return utc.replace(microsecond=utc.microsecond - extra) if extra else utc


def as_card(memory: Memory | None, card_id: int = 1) -> FsrsCard:
    """The `fsrs` Card holding this memory (a new card for None)."""
    card, review, _ = _fsrs()
    if memory is None:
        return card(card_id=card_id)
    return card(card_id=card_id, state=review, step=None, stability=memory.stability,
                difficulty=memory.difficulty, last_review=_utc(memory.last_review))


def step(memory: Memory | None, quality: int, moment: dt.datetime,
         scheduler: Scheduler) -> tuple[Memory, int]:
    """The memory after one answer graded `quality` at `moment`, and the days FSRS would wait
    before the next review at the scheduler's desired retention (>= 1)."""
    when = _utc(moment)
    card, _ = scheduler.review_card(as_card(memory), rating(quality), when)
    assert card.stability is not None and card.difficulty is not None
    days = max(1, round((card.due - when) / dt.timedelta(days=1)))
    return Memory(float(card.stability), float(card.difficulty), when), days


def replay(answers: Iterable[tuple[dt.datetime, int]], scheduler: Scheduler) -> Memory | None:
    """The memory after (moment, grade) answers, taken in time order (ties keep the given
    order); None when there are none."""
    memory: Memory | None = None
    for moment, quality in sorted(answers, key=lambda a: _utc(a[0])):
        memory, _ = step(memory, quality, moment, scheduler)
    return memory


def interval(memory: Memory, scheduler: Scheduler) -> int:
    """Days FSRS waits after the memory's last review, at the scheduler's desired retention."""
    return max(1, int(scheduler._next_interval(stability=memory.stability)))


def recall(memory: Memory | None, at: dt.datetime, scheduler: Scheduler) -> float:
    """Predicted recall at `at` (0 for a card never answered); FSRS counts whole days."""
    if memory is None:
        return 0.0
    return float(scheduler.get_card_retrievability(as_card(memory), _utc(at)))


def check_retention(value: object) -> str | None:
    """Why `value` cannot be the desired retention, or None when it can."""
    low, high = RETENTION_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number from {low:.2f} to {high:.2f}, got {value!r}"
    if not low <= value <= high:
        return (f"must be from {low:.2f} to {high:.2f}, got {value}: below {low:.2f} most "
                f"cards are forgotten before they come back; above {high:.2f} the reviews "
                "a day grow steeply for little more recall")
    return None


def memories(log: Iterable[tuple[str, int, int]], parameters: Sequence[float] | None = None
             ) -> dict[str, Memory]:
    """Every card's memory from an answer log of (question id, epoch ms, grade) rows in log
    order: each card's answers replayed in time order."""
    scheduler = make_scheduler(parameters)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    by_card: dict[str, list[tuple[dt.datetime, int]]] = {}
    for qid, ms, quality in log:
        by_card.setdefault(qid, []).append((epoch + dt.timedelta(milliseconds=ms), quality))
    out: dict[str, Memory] = {}
    for qid, answers in by_card.items():
        memory = replay(answers, scheduler)
        if memory is not None:
            out[qid] = memory
    return out


def store_memories(conn: Any) -> int:
    """Recompute every card's memory from the answer log on a raw sqlite3 connection (the
    schema upgrade), with the learner's fitted parameters; returns the cards with one."""
    import json

    from scheduler.days import to_ms

    raw = conn.execute("SELECT value FROM settings WHERE key = 'fsrs_parameters'").fetchone()
    try:
        parameters = None if raw is None else [float(w) for w in json.loads(raw[0])]
    except (ValueError, TypeError):
        parameters = None
    log = conn.execute("SELECT question_id, reviewed_ms, quality FROM reviews ORDER BY id")
    found = memories(((q, int(ms), int(g)) for q, ms, g in log), parameters)
    conn.execute("UPDATE cards SET fsrs_stability = NULL, fsrs_difficulty = NULL, "
                 "fsrs_last_ms = NULL")
    conn.executemany(
        "UPDATE cards SET fsrs_stability = ?, fsrs_difficulty = ?, fsrs_last_ms = ? "
        "WHERE question_id = ?",
        [(m.stability, m.difficulty, to_ms(m.last_review), q) for q, m in found.items()])
    return len(found)
