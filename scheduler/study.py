"""Custom study, as Anki's filtered decks: which cards to practise outside the day's queue.

* `mistakes`: the cards of the learner's recurring mistakes (last 30 days), most frequent first;
* `lapsed`: cards failed (grade < 3) on a scheduled answer in the last N days, latest first;
* `ahead`: a topic's cards not due yet, soonest due first (practice ahead of schedule);
* `interview`: cram before the interview: introduced cards with the lowest predicted recall on
  the interview day (or now, without a plan), weakest first.

Selections never change the schedule: the session answers them as cram, unless the learner asks
to count the ones due today as their scheduled review.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from scheduler.records import Card
    from scheduler.store import Store

Kind = Literal["mistakes", "lapsed", "ahead", "interview"]
KINDS: tuple[Kind, ...] = ("mistakes", "lapsed", "ahead", "interview")
TITLES: dict[Kind, str] = {
    "mistakes": "My recurring mistakes",
    "lapsed": "Lapsed in the last {days} days",
    "ahead": "{topic} ahead of schedule",
    "interview": "Cram before the interview",
}


@dataclass(frozen=True)
class Selection:
    kind: Kind
    title: str
    question_ids: list[str]


def select_cards(
    store: Store, kind: Kind, *, days: int = 7, topic: str | None = None, limit: int = 20,
    now: dt.datetime | None = None,
) -> Selection:
    """The cards of one custom study set (at most `limit`), in the order to practise them.
    Suspended and retired cards are left out. Raises ValueError for a bad kind or argument."""
    if kind not in KINDS:
        raise ValueError(f"custom study is one of {', '.join(KINDS)}, got {kind!r}")
    if days < 1 or limit < 1:
        raise ValueError("days and limit must be at least 1")
    every = store.cards()
    if kind == "ahead":
        topics = sorted({c.topic for c in every})
        if not topic:
            raise ValueError(f"ahead of schedule needs a topic, one of: {', '.join(topics)}")
        if topic not in topics:
            raise ValueError(f"no topic {topic!r} in your cards; topics: {', '.join(topics)}")
    cards = {c.question_id: c for c in every if not c.retired and not c.suspended}
    ask = _Ask(store, store.study_day(now), now, days, topic, limit)
    ids = _PICKERS[kind](ask, cards)
    title = TITLES[kind].format(days=days, topic=topic)
    return Selection(kind, title, [q for q in ids if q in cards][:limit])


@dataclass(frozen=True)
class _Ask:
    """What a custom study set is picked from and with."""

    store: Store
    today: dt.date
    now: dt.datetime | None
    days: int
    topic: str | None
    limit: int


def _mistakes(ask: _Ask, cards: dict[str, Card]) -> list[str]:
    ids: list[str] = []
    for m in ask.store.recurring_mistakes(30, ask.now, limit=10 * ask.limit):
        if m.question_id not in ids:
            ids.append(m.question_id)
    return ids


def _lapsed(ask: _Ask, cards: dict[str, Card]) -> list[str]:
    start = ask.today - dt.timedelta(days=ask.days - 1)
    ids: list[str] = []
    for r in reversed(ask.store.export_history()["reviews"]):
        day = dt.date.fromisoformat(r["study_day"])
        if (r["mode"] == "review" and r["quality"] < 3 and start <= day <= ask.today
                and r["question_id"] not in ids):
            ids.append(r["question_id"])
    return ids


def _ahead(ask: _Ask, cards: dict[str, Card]) -> list[str]:
    ahead = [c for c in cards.values() if c.topic == ask.topic and c.due is not None
             and c.due > ask.today]
    return [c.question_id for c in sorted(ahead, key=lambda c: (c.due, c.question_id))]


def _interview(ask: _Ask, cards: dict[str, Card]) -> list[str]:
    return _weakest_on_the_day(ask.store, [c for c in cards.values() if not c.is_new], ask.now)


_PICKERS: dict[Kind, Callable[[_Ask, dict[str, Card]], list[str]]] = {
    "mistakes": _mistakes, "lapsed": _lapsed, "ahead": _ahead, "interview": _interview,
}


def _weakest_on_the_day(store: Store, introduced: list[Card], now: dt.datetime | None
                        ) -> list[str]:
    from scheduler.days import resolve_timezone, utc_now
    from scheduler.readiness import (
        FSRS_PARAMETERS_KEY,
        answers_by_card,
        card_recall,
        day_start,
    )

    cfg = store.settings()
    plan = store.plan()
    at = (day_start(plan.interview, cfg.rollover_hour, resolve_timezone(cfg.timezone))
          if plan is not None else (now or utc_now()).astimezone(dt.UTC))
    recall = card_recall(answers_by_card(store.export_history()["reviews"]), at,
                         store.stored_value(FSRS_PARAMETERS_KEY))
    ids = [c.question_id for c in introduced]
    return sorted(ids, key=lambda q: (recall.get(q, 0.0), q))
