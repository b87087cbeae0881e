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
class FakeMistake:
    id: str
    says: str


@dataclass
class FakeQuestion:
    id: str
    topic: str
    choices: tuple[str, ...] = ()
    mistakes: tuple[FakeMistake, ...] = ()
    why: tuple[str, ...] = ()
    steps: tuple[object, ...] = ()
    lab: None = None  # no lab link


def _no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bank cache that cannot be written (a file where its folder should be): a faked bank
    matches no files, so no study index may stand for it (`dojo due` then always loads it)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("DOJO_CACHE", str(blocker / "cache"))


@pytest.fixture
def no_bank(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The question bank fails to load: the learner's schedule must still be shown."""
    _no_cache(monkeypatch, tmp_path)
    module = types.ModuleType("questions.bank")

    def load_bank(*args: object, **kwargs: object) -> None:
        raise RuntimeError("broken install")

    module.load_bank = load_bank  # type: ignore[attr-defined]
    module.ALL_KINDS = frozenset({"mcq", "numeric", "case"})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "questions.bank", module)


@pytest.fixture
def fake_bank(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[FakeQuestion]:
    _no_cache(monkeypatch, tmp_path)
    questions = [
        FakeQuestion("kv-001", "kv-cache", mistakes=(FakeMistake("plus-tpot", "added a TPOT"),)),
        FakeQuestion("batch-001", "batching", choices=("static", "continuous", "none")),
    ]
    module = types.ModuleType("questions.bank")
    bank = types.SimpleNamespace(
        questions=questions, study_order=lambda: list(questions), errors=[],
        topics={"kv-cache": types.SimpleNamespace(title="KV cache", note="")},
        get=lambda qid: next((q for q in questions if q.id == qid), None))

    def load_bank(paths: object = None, *,
                  kinds: frozenset[str] = frozenset({"mcq", "numeric", "case"}),
                  **links: object) -> object:
        assert "case" in kinds  # `due` and `stats` load what the TUI serves, case studies too
        assert "exercises" in links  # and check the lab links against lab's catalogue
        return bank

    module.load_bank = load_bank  # type: ignore[attr-defined]
    module.ALL_KINDS = frozenset({"mcq", "numeric", "case"})  # type: ignore[attr-defined]
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
    assert "could not load the question bank (broken install)" in result.output


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
    assert data["recurring_mistakes"] == [] and data["overridden"] == 0


def test_stats_name_recurring_mistakes_and_count_overrides(fake_bank: list[FakeQuestion]) -> None:
    dojo("due")  # cards for the fake bank
    with Store.open() as store:
        store.answer("kv-001", 1, correct=False, answer_text="5.2", response_ms=1,
                     mistake_id="plus-tpot")
        for _ in range(2):
            store.answer("batch-001", 1, correct=False, answer_text="A) static", response_ms=1,
                         mode="cram", mistake_id="choice:0")
        store.answer("batch-001", 4, correct=True, answer_text="B) continous", response_ms=1,
                     overridden=True)
    data = json.loads(dojo("stats", "--json"))
    assert [(m["question_id"], m["mistake_id"], m["count"], m["says"])
            for m in data["recurring_mistakes"]] == [
        ("batch-001", "choice:0", 2, "chose “static”"),
        ("kv-001", "plus-tpot", 1, "added a TPOT")]
    assert data["overridden"] == 1
    assert data["topic_accuracy"]["batching"] == {
        "answered": 1, "correct": 1, "overridden": 1, "accuracy": 1.0}
    out = dojo("stats")
    assert "×2 chose “static”  [batch-001, topic batching]" in out
    assert "1 counted right after a typo" in out and "(1 mistyped)" in out


def test_export_shows_the_mistake_and_the_override(fake_bank: list[FakeQuestion]) -> None:
    dojo("due")
    with Store.open() as store:
        store.answer("kv-001", 1, correct=False, answer_text="5.2", response_ms=1,
                     mistake_id="plus-tpot")
        store.answer("batch-001", 4, correct=True, answer_text="B", response_ms=1,
                     overridden=True)
    reviews = json.loads(dojo("export"))["reviews"]
    assert [(r["question_id"], r["mistake_id"], r["overridden"]) for r in reviews] == [
        ("kv-001", "plus-tpot", False), ("batch-001", None, True)]


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
