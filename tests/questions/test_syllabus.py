"""The interview syllabus: every item covered by enough questions, the doc generated from the
data, and the learner's coverage view computed from a real database."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from questions.bank import load_bank
from questions.syllabus import (
    FLOOR,
    MISSING_FLOOR,
    SyllabusError,
    SyllabusItem,
    load_syllabus,
    markdown,
    short_items,
)
from trainer.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "syllabus.md"


@pytest.fixture(scope="module")
def items() -> list[SyllabusItem]:
    return load_syllabus(list(load_bank().questions))


def test_the_syllabus_has_36_items_of_which_11_were_added_and_5_were_missing(
        items: list[SyllabusItem]) -> None:
    assert len(items) == 36 and len({i.id for i in items}) == 36
    assert sum(i.added == 2026 for i in items) == 11
    assert sorted(i.id for i in items if i.missing) == [
        "benchmarking", "cuda-graphs", "fp4", "multimodal", "reasoning"]


def test_every_item_has_its_floor_of_questions(items: list[SyllabusItem]) -> None:
    assert [(i.id, n) for i, n in short_items(items)] == []
    for item in items:
        assert len(item.questions) >= (MISSING_FLOOR if item.missing else FLOOR), item.id


def test_the_floor_check_names_a_short_item() -> None:
    thin = SyllabusItem("x", "X", ("a-001", "a-002"))
    missing = SyllabusItem("y", "Y", ("b-001", "b-002", "b-003", "b-004"), 2026, True)
    full = SyllabusItem("z", "Z", ("c-001", "c-002", "c-003"))
    assert [(i.id, n) for i, n in short_items([thin, missing, full])] == [("x", 2), ("y", 4)]


def test_every_bank_question_serves_some_item(items: list[SyllabusItem]) -> None:
    covered = {q for item in items for q in item.questions}
    assert sorted({q.id for q in load_bank().questions} - covered) == []


def test_an_unknown_id_in_the_syllabus_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "syllabus.toml"
    path.write_text('[[item]]\nid = "x"\ntitle = "X"\nquestions = ["nope-001"]\n')
    with pytest.raises(SyllabusError, match="item 'x' names what the bank does not have: "
                                            "nope-001"):
        load_syllabus(list(load_bank().questions), path)


def test_docs_syllabus_md_is_the_data_rendered(items: list[SyllabusItem]) -> None:
    assert DOC.read_text(encoding="utf-8") == markdown(items), (
        "regenerate: dojo questions syllabus --markdown > docs/syllabus.md")


def test_titles_fit_an_80_column_terminal(items: list[SyllabusItem]) -> None:
    assert max(len(i.title) for i in items) <= 52


@pytest.mark.slow
def test_the_cli_shows_counts_and_recall_from_the_learners_answers(dojo_home: Path) -> None:
    from scheduler.store import Store
    from trainer.core.bank import load_study_bank

    bank = load_study_bank()
    db = dojo_home / "dojo.sqlite3"
    with Store.open(db) as store:
        store.sync_cards([(q.id, q.topic) for q in bank.study_order()])  # as the app does
        now = dt.datetime.now(dt.UTC)
        for qid, quality in (("fp4-001", 5), ("fp4-003", 4), ("reasoning-001", 1)):
            store.answer(qid, quality, correct=quality >= 3, answer_text="x", response_ms=9000,
                         now=now)
    result = CliRunner().invoke(main, ["questions", "syllabus", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in json.loads(result.output)}
    assert rows["fp4"]["introduced"] == 2 and rows["fp4"]["questions"] == 8
    assert rows["fp4"]["recall"] == pytest.approx(1.0, abs=0.01)  # answered seconds ago
    assert rows["reasoning"]["introduced"] == 1
    assert rows["roofline"]["introduced"] == 0 and rows["roofline"]["recall"] is None
    text = CliRunner().invoke(main, ["questions", "syllabus"]).output
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "FP4 formats on Blackwell: NVFP4 and MXFP4" in text
