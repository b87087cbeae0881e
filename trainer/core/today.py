"""`dojo due` without the store: today's queue read with plain sqlite3 against the cached study
index, when nothing needs the store (`scheduler.quick.quick_queue` says when). The full path
(SQLAlchemy, the validated bank) costs ~0.6 s of CPU; this one imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.records import Queue as Queue


def lean_queue() -> tuple[Queue, str | None] | None:
    """(today's queue, the bank's note for the learner) as the full path would give them after
    syncing the cards with the bank, or None: then open the store and load the bank."""
    from scheduler.days import pinned_now
    from scheduler.paths import DB_NAME, data_dir
    from scheduler.quick import quick_queue
    from trainer.core.bank import bank_note, study_index

    try:
        now = pinned_now()
    except ValueError:  # a bad $DOJO_NOW: the full path says why
        return None
    index = study_index()
    if index is None or not index.questions:
        return None  # stale or no cache, or an empty bank: the full path loads and says
    queue = quick_queue(data_dir() / DB_NAME, index.questions, now)
    return None if queue is None else (queue, bank_note(index))
