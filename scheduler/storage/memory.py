"""Store helper: every card's FSRS memory recomputed from the answer log, in one session (a
scheduler switch, a parameter fit, an import; the schema upgrade uses
`fsrs_memory.store_memories` on its raw connection)."""

from __future__ import annotations

import json

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from scheduler import fsrs_memory
from scheduler.days import to_ms
from scheduler.models import CardRow, ReviewRow, SettingRow


def fsrs_parameters(s: Session) -> list[float] | None:
    """The learner's fitted FSRS weights (`dojo fsrs fit`), or None for the defaults."""
    from scheduler.readiness import FSRS_PARAMETERS_KEY

    raw = s.scalar(select(SettingRow.value).where(SettingRow.key == FSRS_PARAMETERS_KEY))
    try:
        return None if raw is None else [float(w) for w in json.loads(raw)]
    except (ValueError, TypeError):
        return None


def recompute(s: Session) -> int:
    """Set every card's memory to the time-ordered replay of its answers; returns the cards
    with one (the others are cleared)."""
    log = s.execute(select(ReviewRow.question_id, ReviewRow.reviewed_ms, ReviewRow.quality)
                    .order_by(ReviewRow.id)).all()
    found = fsrs_memory.memories(((q, ms, g) for q, ms, g in log), fsrs_parameters(s))
    s.execute(update(CardRow).values(fsrs_stability=None, fsrs_difficulty=None,
                                     fsrs_last_ms=None))
    changes = [{"question_id": q, "fsrs_stability": m.stability,
                "fsrs_difficulty": m.difficulty, "fsrs_last_ms": to_ms(m.last_review)}
               for q, m in found.items()]
    if changes:
        s.execute(update(CardRow), changes)
    return len(found)
