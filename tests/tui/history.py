"""Thirty days of a learner's data, written through the real store on the real bank: the
size tests run on it as well as on a fresh folder, because panels, bar labels and counts grow
with a history (counts of 100 or more, long topic titles, a plan, mock rounds, flags)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from scheduler.plan import Plan
from trainer.core import mock as mock_core
from trainer.core.services import Services

DAY30 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
DAYS = 30


def _wrong(question: object, rng: random.Random) -> str | None:
    """A named mistake for a wrong answer, as the app records it, when the question has one."""
    mistakes = getattr(question, "mistakes", ())
    if mistakes:
        return str(rng.choice(mistakes).id)
    choices = getattr(question, "choices", ())
    return f"choice:{rng.randrange(len(choices))}" if choices else None


def thirty_days(db_path: Path) -> Services:
    """Write the history into `db_path` and return services open on it at day 30 (the caller
    closes them). About 25 answers a study day, one day off a week, 80% right; a plan three
    weeks out; two finished mock rounds; flags and a suspended card; passed lab levels."""
    rng = random.Random(49)
    start = DAY30 - dt.timedelta(days=DAYS - 1)
    services = Services.open(db_path, now=start)
    store = services.store
    store.update_settings(timezone="UTC", new_limit=25)
    for day in range(DAYS):
        now = start + dt.timedelta(days=day)
        if day % 7 == 5:
            continue
        queue = store.today_queue(now)
        for n, item in enumerate([*queue.reviews, *queue.new][:40]):
            question = services.bank.get(item.question_id)
            if question is None:
                continue
            right = rng.random() < 0.8
            store.answer(item.question_id, 4 if right else 1, correct=right, answer_text="x",
                         response_ms=rng.randrange(4000, 60000),
                         now=now + dt.timedelta(minutes=n),
                         mistake_id=None if right else _wrong(question, rng))
        if day in (10, 24):
            services.now = now
            rnd = mock_core.new_round(services, 45, rng=rng)
            mock_core.abandon(rnd, services)
    services.now = DAY30
    ids = [q.id for q in services.bank.questions]
    for qid in ids[:3]:
        store.flag(qid, "prompt unclear", now=DAY30)
    store.suspend(ids[5])
    store.set_plan(Plan(DAY30.date() + dt.timedelta(days=21), 45))
    for level in (1, 2):
        store.grade_lab_card("kv-bytes", level, 4, passed=True, rebuild=False, pass_s=900,
                             gradings=2, now=DAY30 - dt.timedelta(days=12))
    return services
