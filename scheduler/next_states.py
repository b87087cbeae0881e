"""What each grade would do to a card, under the active scheduler: the one place a due day is
computed (Anki's `next_states`). The grade bar previews it and the Store writes the chosen
grade's entry, so what the keys show is what is saved.

Under SM-2 the rules are `scheduler.transition.apply`. Under FSRS (`scheduler=fsrs`) a
scheduled review keeps SM-2's EF, repetitions, lapses and leech flag (switching back continues
from them), but its interval and due day are FSRS's: the days until the card's predicted recall
falls to the desired retention, from its memory state after this answer. Every answer, in every
mode and under either scheduler, moves the card's FSRS memory (`scheduler.fsrs_memory`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from scheduler import fsrs_memory, transition
from scheduler.sm2 import GRADES, CardState

if TYPE_CHECKING:
    from fsrs import Scheduler

    from scheduler.fsrs_memory import Memory
    from scheduler.records import Mode, Scheduled, Settings


@dataclass(frozen=True)
class NextState:
    """The card after an answer with one grade."""

    grade: int
    scheduled: Scheduled  # the schedule to save (unchanged by re-drill and cram)
    memory: Memory  # the FSRS memory to save
    redrill: bool  # the card comes back today
    days: int | None  # days from the study day to the new due day; None: the schedule stays


@dataclass(frozen=True)
class Outlook:
    """Every grade's next state for one card, and what the bar says beside them."""

    scheduler: str  # "sm2" or "fsrs"
    card: Scheduled  # the card as it stands
    states: dict[int, NextState]  # by grade; empty when the card cannot be answered so
    recall: float | None  # FSRS: the card's predicted recall now (None: never answered)
    why_not: str = ""  # why `states` is empty (a review of a card not due today)


def next_states(
    card: Scheduled, memory: Memory | None, mode: Mode, moment: dt.datetime, day: dt.date,
    settings: Settings, parameters: Sequence[float] | None = None,
) -> dict[int, NextState]:
    """For every grade 0-5: the card after answering it so at `moment` (study `day`).

    Raises ValueError for a bad mode or a review of a card not due until after `day` (as
    `transition.apply` does)."""
    fsrs = fsrs_memory.make_scheduler(parameters, settings.desired_retention)
    return {grade: next_state(card, memory, mode, moment, day, settings, parameters, grade, fsrs)
            for grade in GRADES}


def next_state(
    card: Scheduled, memory: Memory | None, mode: Mode, moment: dt.datetime, day: dt.date,
    settings: Settings, parameters: Sequence[float] | None, grade: int,
    fsrs: Scheduler | None = None,
) -> NextState:
    """One grade's entry of `next_states` (the plan's simulation answers one grade at a time);
    `fsrs`: the scheduler for these parameters and retention, when the caller has built it."""
    if fsrs is None:
        fsrs = fsrs_memory.make_scheduler(parameters, settings.desired_retention)
    scheduled, redrill = transition.apply(card, grade, mode, day, settings)
    after, fsrs_days = fsrs_memory.step(memory, grade, moment, fsrs)
    if mode == "review" and settings.scheduler == "fsrs":
        state = CardState(scheduled.state.ef_hundredths, scheduled.state.repetitions, fsrs_days)
        scheduled = replace(scheduled, state=state, due=day + dt.timedelta(days=fsrs_days))
    days = None if mode != "review" or scheduled.due is None else (scheduled.due - day).days
    return NextState(grade, scheduled, after, redrill, days)
