"""Readiness: each card's predicted recall on the interview day, from the FSRS memory model.

SM-2 says when to review, not how likely a card is remembered on a given day; FSRS does (the
model Anki ships, the `fsrs` package). The recipe, which docs/readiness.md spells out so anyone
can recompute it from `dojo export`:

* replay every answer of a card in time order (every mode: re-drills and cram are memory events
  too) as an FSRS review at the moment it was answered, grade 0-2 -> Again, 3 -> Hard,
  4 -> Good, 5 -> Easy, with the default parameters (or the learner's fitted ones), no fuzzing
  and no learning steps (steps move due dates only, never stability or difficulty);
* the card's retrievability at the start of the interview's study day (its rollover hour in the
  learner's time zone); `fsrs` counts whole days since the last review;
* a topic's recall is the mean over its introduced cards (those with a scheduled answer), 0 for
  a topic with none.

`fsrs` is imported inside the functions: the TUI and `dojo --help` must not pay for it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.fsrs_memory import make_scheduler, recall, replay

FSRS_PARAMETERS_KEY = "fsrs_parameters"  # settings-table key: the learner's fitted weights


def day_start(day: dt.date, rollover_hour: int, tz: dt.tzinfo | None) -> dt.datetime:
    """When a study day begins, in UTC: its rollover hour in the learner's time zone."""
    local = dt.datetime.combine(day, dt.time(rollover_hour))
    aware = local.replace(tzinfo=tz) if tz is not None else local.astimezone()
    return aware.astimezone(dt.UTC)


def card_recall(
    history: Mapping[str, Sequence[tuple[dt.datetime, int]]], at: dt.datetime,
    parameters: Sequence[float] | None = None,
) -> dict[str, float]:
    """Per card (question id -> its answers): the predicted recall at `at` (UTC)."""
    scheduler = make_scheduler(parameters)
    out: dict[str, float] = {}
    for qid, answers in sorted(history.items()):
        memory = replay(answers, scheduler)
        if memory is not None:
            out[qid] = recall(memory, at, scheduler)
    return out


def topic_recall(
    topics: Mapping[str, Sequence[str]], introduced: set[str], recall: Mapping[str, float]
) -> dict[str, float]:
    """Per topic: mean recall over its introduced cards; 0.0 for a topic with none."""
    out: dict[str, float] = {}
    for topic, ids in topics.items():
        values = [recall.get(q, 0.0) for q in ids if q in introduced]
        out[topic] = sum(values) / len(values) if values else 0.0
    return out


def answers_by_card(reviews: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[dt.datetime,
                                                                                  int]]]:
    """Group exported answer rows (`dojo export`'s `reviews`, in log order) by card."""
    out: dict[str, list[tuple[dt.datetime, int]]] = {}
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    for r in reviews:
        moment = epoch + dt.timedelta(milliseconds=int(r["reviewed_ms"]))
        out.setdefault(str(r["question_id"]), []).append((moment, int(r["quality"])))
    return out
