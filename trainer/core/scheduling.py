"""What `dojo` commands ask of the scheduler beyond the store's own calls: a custom study set
and FSRS's fitted parameters. Commands never import the scheduler (an import-linter
contract); the scheduler is imported inside each function."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.store import Store


def study_set(store: Store, kind: str, *, days: int, topic: str | None, limit: int,
              now: dt.datetime | None = None) -> Any:
    """A custom study set (`scheduler.study.select_cards`): ValueError names a bad choice."""
    from scheduler.study import select_cards

    return select_cards(store, kind, days=days, topic=topic, limit=limit,  # type: ignore[arg-type]
                        now=now)


@dataclass(frozen=True)
class Fit:
    """One fit of FSRS's parameters to the answer log: on how many answers, the log-loss with
    the parameters in use (`fitted_before`: the learner's own, else the defaults) and with the
    fitted ones, and whether the fitted ones were kept (they predict better)."""

    reviews: int
    before: float
    after: float
    kept: bool
    fitted_before: bool


def reset_fsrs(store: Store) -> None:
    """Forget fitted parameters (FSRS's defaults) and reschedule under them."""
    from scheduler.readiness import FSRS_PARAMETERS_KEY

    store.store_value(FSRS_PARAMETERS_KEY, None)
    store.recompute_memories(reschedule=True)


def fit_fsrs(store: Store) -> Fit:
    """Fit FSRS's parameters to the answer log and keep them (rescheduling) when they predict
    it better. ValueError: not enough answers (says how many); ImportError: no optimiser."""
    from scheduler.fsrs_schedule import fit
    from scheduler.readiness import FSRS_PARAMETERS_KEY, answers_by_card

    current = store.stored_value(FSRS_PARAMETERS_KEY)
    result = fit(answers_by_card(store.export_history()["reviews"]), current)
    kept = result.after < result.before
    if kept:
        store.store_value(FSRS_PARAMETERS_KEY, result.parameters)
        store.recompute_memories(reschedule=True)
    return Fit(result.reviews, result.before, result.after, kept, bool(current))
