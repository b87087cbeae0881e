"""A simulated learner's multi-week history, written in `dojo export`'s format.

Cards follow the real study rule (`scheduler.transition.apply`), so due dates, intervals and
mature cards are what the app would have produced; the answers are drawn from a seeded RNG: many
successes per topic, lapses followed by same-day re-drills, cram sessions, typo overrides and
named mistakes. Tests count what they need straight from the returned document, independently
of the store's SQL.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from scheduler.records import Scheduled, Settings
from scheduler.sm2 import CardState
from scheduler.transition import apply, needs_redrill

# Topics of the TUI fixture bank (so the Stats screen shows their titles) plus one topic the
# bank lacks; each card id exists in the bank or not (retired cards keep their history).
TOPICS: dict[str, list[str]] = {
    "batching": ["batching-001", *(f"batching-1{i:02d}" for i in range(19))],
    "kv-cache": ["kv-cache-001", "kv-cache-002", *(f"kv-cache-1{i:02d}" for i in range(17))],
    "paging": [f"paging-1{i:02d}" for i in range(15)],
}


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _day(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def simulate_history(
    first_day: dt.date, days: int, seed: int = 7, new_per_day: int = 1,
    topics: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """`days` study days from `first_day` (answers at 12:00-13:00 UTC, rollover 4 AM UTC).

    Each day: due cards oldest first, then up to `new_per_day` new cards; a grade below 4 is
    re-drilled the same day until it reaches 4; every fifth day a short cram session; some wrong
    answers carry a named mistake and some are counted right after a typo (overridden)."""
    rng = random.Random(seed)
    cfg = Settings(timezone="UTC")
    topics = TOPICS if topics is None else topics
    order = [(qid, topic) for topic, ids in topics.items() for qid in ids]
    rng.shuffle(order)  # new cards interleave topics, as the bank's study order does
    created = _ms(dt.datetime.combine(first_day, dt.time(9), dt.UTC))
    cards: dict[str, dict[str, Any]] = {}
    states: dict[str, Scheduled] = {}
    for position, (qid, topic) in enumerate(order):
        cards[qid] = {"question_id": qid, "topic": topic, "position": position,
                      "suspended": False, "buried_until": None, "retired": False,
                      "created_ms": created, "last_reviewed_ms": None}
        states[qid] = Scheduled(CardState.new(), None, 0, False)
    reviews: list[dict[str, Any]] = []
    skill = {topic: rng.uniform(0.6, 0.9) for topic in topics}  # chance of a right answer

    def answer(qid: str, mode: str, when: dt.datetime, day: dt.date) -> int:
        topic = cards[qid]["topic"]
        right = rng.random() < skill[topic] + (0.05 if states[qid].state.repetitions > 2 else 0)
        overridden = not right and rng.random() < 0.12
        if right:
            quality = rng.choice((3, 4, 4, 5, 5))
        elif overridden:  # a typo: the learner counts the wrong verdict right
            quality = 4
        else:
            quality = rng.choice((0, 1, 2, 2))
        old = states[qid]
        new, _ = apply(old, quality, mode, day, cfg)  # type: ignore[arg-type]
        before_ms = cards[qid]["last_reviewed_ms"]
        if mode == "review":
            states[qid] = new
            cards[qid]["last_reviewed_ms"] = _ms(when)
        reviews.append({
            "uid": f"sim-{len(reviews):05d}", "question_id": qid, "reviewed_ms": _ms(when),
            "study_day": day.isoformat(), "mode": mode, "quality": quality,
            "correct": right or overridden, "answer_text": f"a{quality}",
            "response_ms": rng.randint(6_000, 70_000), "params": None,
            "before": {"ef_hundredths": old.state.ef_hundredths,
                       "repetitions": old.state.repetitions, "interval": old.state.interval,
                       "due": _day(old.due), "lapses": old.lapses, "leech": old.leech,
                       "last_reviewed_ms": before_ms},
            "after": {"ef_hundredths": new.state.ef_hundredths,
                      "repetitions": new.state.repetitions, "interval": new.state.interval,
                      "due": _day(new.due), "lapses": new.lapses, "leech": new.leech},
            "mistake_id": (None if right or overridden or rng.random() < 0.5
                           else rng.choice(("choice:1", "choice:2", "forgot-k-and-v"))),
            "overridden": overridden,
        })
        return quality

    for offset in range(days):
        day = first_day + dt.timedelta(days=offset)
        clock = dt.datetime.combine(day, dt.time(12), dt.UTC)
        due = sorted((s.due, cards[q]["position"], q) for q, s in states.items()
                     if s.due is not None and s.due <= day)
        fresh = [q for q, _ in order if states[q].due is None][:new_per_day]
        redrill: list[str] = []
        for qid in [q for _, _, q in due] + fresh:
            clock += dt.timedelta(seconds=rng.randint(20, 90))
            if needs_redrill(answer(qid, "review", clock, day)):
                redrill.append(qid)
        while redrill:  # the same day until each reaches 4
            qid = redrill.pop(0)
            clock += dt.timedelta(seconds=rng.randint(20, 90))
            if needs_redrill(answer(qid, "redrill", clock, day)):
                redrill.append(qid)
        if offset % 5 == 4:
            for qid in rng.sample([q for q, s in states.items() if s.due is not None], 4):
                clock += dt.timedelta(seconds=rng.randint(20, 90))
                answer(qid, "cram", clock, day)
    for qid, state in states.items():
        cards[qid].update({"ef_hundredths": state.state.ef_hundredths,
                           "repetitions": state.state.repetitions,
                           "interval": state.state.interval, "due": _day(state.due),
                           "lapses": state.lapses, "leech": state.leech})
    return {"format": "serving-dojo-history", "version": 1,
            "exported_at": "2026-11-02T10:00:00+00:00",
            "cards": sorted(cards.values(), key=lambda c: c["position"]),
            "reviews": reviews, "lab_attempts": [], "flags": [], "lab_cards": []}
