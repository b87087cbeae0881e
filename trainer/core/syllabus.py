"""Syllabus coverage for the learner: each item's questions, how many are introduced, and the
predicted recall on them (FSRS, as the plan and Stats predict it)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from questions.syllabus import SyllabusItem, load_syllabus

if TYPE_CHECKING:
    from questions.bank import Bank
    from scheduler.store import Store


@dataclass(frozen=True)
class Coverage:
    item: SyllabusItem
    introduced: int  # of item.questions, how many the learner has studied
    recall: float | None  # mean predicted recall over the introduced ones; None if none

    @property
    def questions(self) -> int:
        return len(self.item.questions)


def coverage(store: Store, bank: Bank, now: dt.datetime | None = None) -> list[Coverage]:
    """Every syllabus item with the learner's progress on it, at `now` (default: the clock)."""
    from scheduler.days import utc_now
    from scheduler.readiness import FSRS_PARAMETERS_KEY, answers_by_card, card_recall

    items = load_syllabus(list(bank.questions), strict=False)
    at = (now or utc_now()).astimezone(dt.UTC)
    introduced = {c.question_id for c in store.cards() if not c.is_new and not c.retired}
    reviews = store.export_history()["reviews"]
    recall = card_recall(answers_by_card(reviews), at, store.stored_value(FSRS_PARAMETERS_KEY))
    rows = []
    for item in items:
        seen = [q for q in item.questions if q in introduced]
        values = [recall.get(q, 0.0) for q in seen]
        rows.append(Coverage(item, len(seen), sum(values) / len(values) if values else None))
    return rows
