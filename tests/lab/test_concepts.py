"""Every grading case names the bank questions it tests (lab/exercises/*/concepts.toml), and a
grading that fails cases brings those questions back into today's queue: once per question per
day, with the lab as the reason, and without touching their SM-2 state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lab.concepts import concepts_for, rules
from lab.exercises import discover
from questions.bank import ALL_KINDS, load_bank
from scheduler.store import Store
from tests.scheduler.conftest import at
from trainer.cli import main

BROKEN_FP8 = Path(__file__).parent / "broken" / "fp8_two_bytes.py"


@pytest.mark.slow
def test_every_case_names_at_least_one_question_of_the_bank() -> None:
    bank = {q.id for q in load_bank(kinds=ALL_KINDS).questions}
    checked = 0
    for ex in discover():
        assert rules(ex), f"{ex.id} has no concepts.toml"
        for rule in rules(ex):
            missing = [q for q in rule.questions if q not in bank]
            assert not missing, f"{ex.id} L{rule.level} {rule.cases}: not in the bank: {missing}"
            assert rule.questions, f"{ex.id} L{rule.level} {rule.cases} names no question"
        grading = ex.grading()
        for level in ex.level_numbers:
            for seed in (1, 2):
                for case in grading.cases(level, seed):
                    assert concepts_for(ex, level, case.id), \
                        f"{ex.id} L{level} case {case.id} names no concept"
                    checked += 1
    assert checked > 300


def test_a_recall_is_once_per_question_per_day_and_leaves_the_card_alone(
        tmp_path: Path) -> None:
    with Store.open(tmp_path / "d.sqlite3") as store:
        store.sync_cards([("q1", "t"), ("q2", "t")])
        store.answer("q1", 4, correct=True, answer_text="x", response_ms=1, now=at(3, 10))
        before = store.card("q1")  # introduced this morning: next due tomorrow
        assert store.add_lab_recalls([("q1", "kv", 1, "c1"), ("nope", "kv", 1, "c1")],
                                     now=at(3)) == ["q1"]
        assert store.add_lab_recalls([("q1", "kv", 1, "c2")], now=at(3, 15)) == []
        lab = store.today_queue(at(3, 16)).lab
        assert [(i.question_id, i.kind, i.exercise, i.level, i.case) for i in lab] == [
            ("q1", "lab", "kv", 1, "c1")]
        assert store.card("q1") == before  # SM-2 state untouched
        store.answer("q1", 4, correct=True, answer_text="x", response_ms=1, now=at(3, 17),
                     mode="redrill")
        assert store.card("q1") == before
        assert store.today_queue(at(3, 18)).lab == ()  # answered since: done for today
        assert store.today_queue(at(4)).lab == ()  # a new day: gone
        assert store.add_lab_recalls([("q1", "kv", 1, "c1")], now=at(4)) == ["q1"]


@pytest.mark.slow
def test_grading_a_broken_level_brings_its_questions_back_today() -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["due"]).exit_code == 0  # the bank's cards exist
    with Store.open() as store:
        before = store.card("kv-cache-009")
    out = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--device", "cpu",
                               "--file", str(BROKEN_FP8), "--record"])
    assert out.exit_code == 1, out.output
    assert "question" in out.output and "added to today's queue" in out.output
    due = json.loads(runner.invoke(main, ["due", "--json"]).output)
    lab = {i["question_id"]: i for i in due["items"] if i.get("reason") == "lab"}
    assert "kv-cache-009" in lab, due  # fp8 bytes: the dtype question
    assert lab["kv-cache-009"]["exercise"] == "kv-bytes" and lab["kv-cache-009"]["level"] == 1
    assert "fp8" in lab["kv-cache-009"]["case"]
    assert due["lab"] == len(lab)
    with Store.open() as store:
        assert store.card("kv-cache-009") == before  # not reset, not rescheduled
    again = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--device", "cpu",
                                 "--file", str(BROKEN_FP8), "--record"])
    assert again.exit_code == 1
    due2 = json.loads(runner.invoke(main, ["due", "--json"]).output)
    assert [i["question_id"] for i in due2["items"]].count("kv-cache-009") == 1


@pytest.mark.slow
def test_grading_the_untouched_stub_brings_nothing_back() -> None:
    """A stub that raises NotImplementedError says nothing about what the learner knows: its
    failed cases add no question to today's queue."""
    from lab.exercises import get

    runner = CliRunner()
    assert runner.invoke(main, ["due"]).exit_code == 0
    out = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--device", "cpu",
                               "--file", str(get("kv-bytes").stub_path)])
    assert out.exit_code == 1, out.output
    assert "added to today's queue" not in out.output, out.output
    due = json.loads(runner.invoke(main, ["due", "--json"]).output)
    assert [i for i in due["items"] if i.get("reason") == "lab"] == []
