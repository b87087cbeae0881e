"""FSRS memory on the card: kept in the answer's transaction, equal to an
independent replay of the card's answers in time order with the `fsrs` package; an import out
of time order gives the sorted log's state; undo restores it; `desired_retention` is checked and
sets FSRS's intervals; the schema upgrade computes it."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

import pytest
from fsrs import Card, Rating, Scheduler

from scheduler import schema
from scheduler.store import Store
from tests.scheduler.conftest import at, grade
from tests.scheduler.learner import simulate_history

RATING = [Rating.Again] * 3 + [Rating.Hard, Rating.Good, Rating.Easy]


def _independent(answers: list[tuple[dt.datetime, int]], retention: float = 0.9) -> Card:
    s = Scheduler(enable_fuzzing=False, learning_steps=(), relearning_steps=(),
                  desired_retention=retention)
    card = Card(card_id=1)
    for when, q in sorted(answers, key=lambda a: a[0]):
        card, _ = s.review_card(card, RATING[q], when)
    return card


def test_every_answer_updates_the_memory_as_a_replay_does(store: Store) -> None:
    store.sync_cards([("a", "t")])
    answers: list[tuple[dt.datetime, int]] = []
    for day, q, mode in ((1, 4, "review"), (1, 2, "cram"), (2, 5, "review"), (8, 1, "review"),
                         (8, 4, "redrill"), (9, 3, "review")):
        moment = at(day, 12 + len(answers))
        grade(store, "a", q, moment, mode)  # type: ignore[arg-type]
        answers.append((moment, q))
        card, memory = _independent(answers), store.card("a").memory
        assert memory is not None
        assert (memory.stability, memory.difficulty, memory.last_review) == (
            card.stability, card.difficulty, card.last_review)


def test_undo_restores_the_memory_exactly(store: Store) -> None:
    store.sync_cards([("a", "t")])
    grade(store, "a", 4, at(1))
    grade(store, "a", 5, at(2))
    before = store.card("a").memory
    result = grade(store, "a", 1, at(9))
    assert store.card("a").memory != before
    store.undo(review_id=result.review_id)
    assert store.card("a").memory == before
    first = store.history("a")[0].id
    store.undo(review_id=store.history("a")[-1].id)
    store.undo(review_id=first)
    assert store.card("a").memory is None  # no answers left


def _shuffled_copy(history: dict, seed: int) -> dict:
    data = json.loads(json.dumps(history))
    random.Random(seed).shuffle(data["reviews"])
    return data


def test_an_import_out_of_time_order_gives_the_sorted_state(tmp_path: Path) -> None:
    history = simulate_history(dt.date(2026, 1, 1), 40)
    with Store.open(tmp_path / "sorted.sqlite3") as a, \
            Store.open(tmp_path / "shuffled.sqlite3") as b:
        a.import_history(history)
        b.import_history(_shuffled_copy(history, 3))
        sorted_memory = {c.question_id: c.memory for c in a.cards()}
        shuffled_memory = {c.question_id: c.memory for c in b.cards()}
    assert any(m is not None for m in sorted_memory.values())
    assert shuffled_memory == sorted_memory
    # and both are the independent replay in time order
    for qid, memory in sorted_memory.items():
        answers = [(dt.datetime.fromtimestamp(r["reviewed_ms"] / 1000, dt.UTC), r["quality"])
                   for r in history["reviews"] if r["question_id"] == qid]
        if not answers:
            assert memory is None
            continue
        card = _independent(answers)
        assert memory is not None and (memory.stability, memory.difficulty) == (
            card.stability, card.difficulty)


def test_desired_retention_is_checked_and_sets_the_interval(store: Store) -> None:
    assert store.settings().desired_retention == 0.90
    for bad, why in ((0.6, "below 0.70 most cards are forgotten"), (0.99, "above 0.97"),
                     ("high", "a number from 0.70 to 0.97, got .high.")):
        with pytest.raises(ValueError, match=f"desired_retention must be .*{why}"):
            store.update_settings(desired_retention=bad)
    store.update_settings(scheduler="fsrs", desired_retention=0.8)
    store.sync_cards([("a", "t")])
    result = grade(store, "a", 4, at(1))
    card = _independent([(at(1), 4)], retention=0.8)
    days = round((card.due - at(1)) / dt.timedelta(days=1))
    assert result.due == at(1).date() + dt.timedelta(days=days)
    at_90 = _independent([(at(1), 4)], retention=0.9)
    assert days > round((at_90.due - at(1)) / dt.timedelta(days=1))  # lower target: longer


def test_schema_upgrade_computes_the_memory(tmp_path: Path) -> None:
    path = tmp_path / "dojo.sqlite3"
    with Store.open(path) as store:
        store.update_settings(timezone="UTC")
        store.sync_cards([("a", "t")])
        grade(store, "a", 4, at(1))
        grade(store, "a", 3, at(3))
        want = store.card("a").memory
    conn = sqlite3.connect(path, isolation_level=None)  # as a v6 file: no memory columns
    conn.execute("ALTER TABLE cards DROP COLUMN fsrs_stability")
    conn.execute("ALTER TABLE cards DROP COLUMN fsrs_difficulty")
    conn.execute("ALTER TABLE cards DROP COLUMN fsrs_last_ms")
    conn.execute("PRAGMA user_version = 6")
    conn.close()
    assert schema.SCHEMA_VERSION == 7
    with Store.open(path) as store:
        assert store.card("a").memory == want and want is not None


def test_new_parameters_recompute_the_memory_and_reschedule_under_fsrs(store: Store) -> None:
    """As after `dojo fsrs fit`: memories replayed with the new weights; under FSRS each
    introduced card is due FSRS's interval after its latest answer's day; SM-2 dues stay."""
    store.sync_cards([("a", "t"), ("b", "t")])
    for qid in ("a", "b"):
        grade(store, qid, 4, at(1))
    grade(store, "a", 3, at(3))
    weights = list(Scheduler().parameters)
    weights[2] *= 3  # the initial stability after Good: three times the default
    store.store_value("fsrs_parameters", weights)
    sm2_due = store.card("a").due
    store.recompute_memories(reschedule=True)
    assert store.card("a").due == sm2_due  # scheduler=sm2: only the memory moves
    store.update_settings(scheduler="fsrs")
    store.recompute_memories(reschedule=True)
    fitted = Scheduler(parameters=weights, enable_fuzzing=False, learning_steps=(),
                       relearning_steps=())
    card = Card(card_id=1)
    for when, q in ((at(1), 4), (at(3), 3)):
        card, _ = fitted.review_card(card, RATING[q], when)
    days = round((card.due - at(3)) / dt.timedelta(days=1))
    got = store.card("a")
    assert got.memory is not None and got.memory.stability == card.stability
    assert got.due == at(3).date() + dt.timedelta(days=days) and got.interval == days
