"""`dojo due/stats/backup/export/import` against a real database in $DOJO_HOME."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from scheduler.paths import data_dir
from scheduler.store import Store
from trainer.cli import main


@dataclass
class FakeQuestion:
    id: str
    topic: str


@pytest.fixture
def no_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "questions.bank", None)  # import fails: bank not built


@pytest.fixture
def fake_bank(monkeypatch: pytest.MonkeyPatch) -> list[FakeQuestion]:
    questions = [FakeQuestion("kv-001", "kv-cache"), FakeQuestion("batch-001", "batching")]
    module = types.ModuleType("questions.bank")
    bank = types.SimpleNamespace(questions=questions, study_order=lambda: list(questions))
    module.load_bank = lambda: bank  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "questions.bank", module)
    return questions


def dojo(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_due_syncs_the_bank_and_lists_today(fake_bank: list[FakeQuestion]) -> None:
    out = dojo("due")
    assert "0 reviews, 2 new, 0 to re-drill" in out
    assert out.index("kv-001") < out.index("batch-001")
    with Store.open(data_dir() / "dojo.sqlite3") as store:
        store.answer("kv-001", 2, correct=False, answer_text="", response_ms=1)
    data = json.loads(dojo("due", "--json"))
    assert [(i["question_id"], i["kind"]) for i in data["items"]] == [
        ("batch-001", "new"), ("kv-001", "redrill")]
    fake_bank.pop()  # a question leaves the bank: its card is retired, not queued
    assert "batch-001" not in dojo("due")


def test_due_without_the_bank_uses_known_cards(no_bank: None) -> None:
    with Store.open() as store:
        store.sync_cards([("x", "t")])
    result = CliRunner().invoke(main, ["due"])
    assert result.exit_code == 0 and "1 new" in result.output and "x  [t]" in result.output


def test_stats_text_and_json(no_bank: None) -> None:
    with Store.open() as store:
        store.sync_cards([("x", "kv"), ("y", "kv")])
        store.answer("x", 5, correct=True, answer_text="", response_ms=1)
        store.answer("y", 1, correct=False, answer_text="", response_ms=1)
    out = dojo("stats")
    assert "Streak: 1 day" in out and "kv" in out and "50% of 2" in out
    data = json.loads(dojo("stats", "--json", "--days", "7"))
    assert data["streak"] == 1 and data["topic_accuracy"]["kv"]["accuracy"] == 0.5
    assert len(data["forecast"]) == 7 and sum(data["reviews_per_day"].values()) == 2


def test_backup_export_import(no_bank: None, tmp_path: Path) -> None:
    with Store.open() as store:
        store.sync_cards([("x", "kv")])
        store.answer("x", 4, correct=True, answer_text="", response_ms=1)
    backup = Path(dojo("backup").strip())
    assert backup.is_file() and backup.parent == data_dir() / "backups"
    target = tmp_path / "history.json"
    dojo("export", str(target))
    assert json.loads(target.read_text())["reviews"][0]["question_id"] == "x"
    assert json.loads(dojo("export"))["format"] == "serving-dojo-history"
    assert "0 answers (1 already present)" in dojo("import", str(target))


def test_import_refuses_bad_files_with_a_clear_error(no_bank: None, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = CliRunner().invoke(main, ["import", str(bad)])
    assert result.exit_code == 1 and "not a JSON file" in result.output
    bad.write_text(json.dumps({"format": "serving-dojo-history", "version": 1,
                               "cards": [{"question_id": 3}]}))
    result = CliRunner().invoke(main, ["import", str(bad)])
    assert result.exit_code == 1 and "cards[0].question_id" in result.output


def test_refused_database_is_a_clean_cli_error(no_bank: None) -> None:
    (data_dir() / "dojo.sqlite3").write_bytes(b"\x00garbage" * 600)
    result = CliRunner().invoke(main, ["due"])
    assert result.exit_code == 1 and "not a readable SQLite database" in result.output


@pytest.mark.parametrize("command", ["due", "stats", "backup", "export", "import"])
def test_every_command_has_help(command: str) -> None:
    out = dojo(command, "--help")
    assert "Usage:" in out and len(out.splitlines()) > 4
