"""The cached bank behind `dojo due`: used while valid (nothing parsed, no store opened),
rebuilt when a question file, the app's version or the cache file itself changes, and never a
different answer: the same errors and the same `dojo due` output as without it.

Real files and a real SQLite database throughout; the built-in folder is a temporary copy of a
small fixture topic so each validation is quick.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import questions.bank
import questions.files
import questions.validate
import trainer
from questions.cache import cache_dir
from scheduler.paths import data_dir
from scheduler.store import Store
from trainer.cli import main
from trainer.core.bank import INDEX_ENTRY, index_of, load_study_bank, study_index
from trainer.core.today import lean_queue

FIXTURES = Path(__file__).parents[1] / "fixtures" / "questions"
TOPIC = FIXTURES / "valid" / "fixture-kv.toml"
BROKEN = FIXTURES / "broken" / "typo-key.toml"  # expect: 17:typo-key-001.tolerence
NOW = "2026-03-10T12:00"


@pytest.fixture
def builtin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A built-in folder of one fixture topic, and an empty cache of this test's own."""
    folder = tmp_path / "topics"
    folder.mkdir()
    shutil.copy(TOPIC, folder / TOPIC.name)
    monkeypatch.setattr(questions.files, "BUILTIN_DIR", folder)
    monkeypatch.setattr(questions.bank, "BUILTIN_DIR", folder)
    monkeypatch.setenv("DOJO_CACHE", str(tmp_path / "cache"))
    return folder / TOPIC.name


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the validator's runs (the parse and checks the cache is there to skip)."""
    calls: list[int] = []
    real = questions.validate.validate_files

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(questions.validate, "validate_files", counting)
    return calls


@pytest.fixture
def store_opens(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = Store.open.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Store], *args: Any, **kwargs: Any) -> Store:
        calls.append(1)
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Store, "open", classmethod(counting))
    return calls


def dojo(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(main, list(args), env={"DOJO_NOW": NOW})
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _pack(source: Path) -> Path:
    folder = data_dir() / "packs"
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, folder / source.name))


def _ready_store() -> None:
    """Cards synced, and today's backup made (a second open of an existing file makes it):
    after this, `dojo due` only reads."""
    dojo("due")
    Store.open().close()


def test_a_valid_cache_answers_due_and_stats_without_parsing(
        builtin: Path, validations: list[int], store_opens: list[int]) -> None:
    _ready_store()
    assert len(validations) == 1
    index = study_index()
    assert index is not None and index == index_of(load_study_bank())
    assert len(index.questions) > 1 and index.questions[0] == ("fixture-kv-001", "fixture-kv")
    opened = len(store_opens)
    out, _ = dojo("due")
    assert len(validations) == 1 and len(store_opens) == opened  # the lean path answered
    assert "fixture-kv-001" in out
    assert "Cards:" in dojo("stats")[0]
    assert len(validations) == 1  # `dojo stats` reads the cached report too


def test_a_changed_question_file_is_seen(builtin: Path, validations: list[int]) -> None:
    load_study_bank()
    assert study_index() is not None
    stat = builtin.stat()
    os.utime(builtin, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched
    assert study_index() is None
    load_study_bank()
    assert len(validations) == 2 and study_index() is not None

    text = builtin.read_text(encoding="utf-8")
    builtin.write_text(text.replace('id = "fixture-kv-003"', 'id = "fixture-kv-009"'),
                       encoding="utf-8")  # same size, new content
    assert study_index() is None
    bank = load_study_bank()
    index = study_index()
    assert len(validations) == 3 and index is not None and index == index_of(bank)
    assert "fixture-kv-009" in {q for q, _ in index.questions}

    _pack(BROKEN)  # a file added
    assert study_index() is None


def test_a_new_app_version_rebuilds(builtin: Path, validations: list[int],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    load_study_bank()
    assert study_index() is not None
    monkeypatch.setattr(trainer, "__version__", "99.0.0")
    assert study_index() is None
    load_study_bank()
    assert len(validations) == 2  # the validated report is keyed on the version too
    assert study_index() is not None


@pytest.mark.parametrize("damage", ["truncated", "garbage", "wrong shape"])
def test_a_corrupt_cache_is_rebuilt_silently(builtin: Path, validations: list[int],
                                             damage: str) -> None:
    expected = index_of(load_study_bank())
    entry = cache_dir() / INDEX_ENTRY
    (report,) = cache_dir().glob("bank-*.pickle")
    text = entry.read_text(encoding="utf-8")
    if damage == "truncated":
        entry.write_text(text[: len(text) // 2], encoding="utf-8")
        report.write_bytes(report.read_bytes()[:100])
    elif damage == "garbage":
        entry.write_bytes(b"\x00\xff not json")
        report.write_bytes(b"not a pickle")
    else:
        stored = json.loads(text)
        stored["value"] = {"questions": 5}
        entry.write_text(json.dumps(stored), encoding="utf-8")
    assert study_index() is None
    assert index_of(load_study_bank()) == expected
    assert study_index() == expected
    assert len(validations) == (1 if damage == "wrong shape" else 2)


def test_a_malformed_file_gives_the_same_error_cached_and_not(
        builtin: Path, validations: list[int], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    pack = _pack(BROKEN)
    _ready_store()
    fresh = load_study_bank().errors
    cached = load_study_bank().errors
    assert len(validations) == 1
    assert [(e.line, e.field) for e in cached if e.file == pack] == [(17, "typo-key-001.tolerence")]
    assert [str(e) for e in cached] == [str(e) for e in fresh]

    assert lean_queue() is not None
    lean = dojo("due")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("DOJO_CACHE", str(blocker / "cache"))  # no cache: the full path
    assert lean_queue() is None
    full = dojo("due")
    assert lean == full
    assert "kept some questions out" in full[1] and str(pack) in full[1]


def _history(now: dt.datetime) -> None:
    """Answers over the past days (reviews due today, a lapse to re-drill, a suspended card)
    and a question a failed lab case brought back today."""
    with Store.open() as store:
        store.update_settings(timezone="UTC", new_limit=6)
        ids = [i.question_id for i in store.today_queue(now - dt.timedelta(days=6)).items]
        far = store.cards()[60].question_id  # not among today's new cards
        for days_ago, qid, quality in ((6, ids[0], 4), (6, ids[1], 5), (6, ids[2], 4),
                                       (3, ids[3], 2), (0, ids[2], 1)):
            store.answer(qid, quality, correct=quality >= 3, answer_text="x", response_ms=900,
                         now=now - dt.timedelta(days=days_ago))
        store.suspend(ids[1])
        store.add_lab_recalls([(far, "kv-bytes", 1, "case-3")], now)


@pytest.mark.slow
def test_due_prints_the_same_with_and_without_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_opens: list[int]) -> None:
    """The real bank and a real history: the lean path's output, text and JSON, is the full
    path's, byte for byte."""
    monkeypatch.setenv("DOJO_CACHE", str(tmp_path / "cache"))
    now = dt.datetime.fromisoformat(NOW).replace(tzinfo=dt.UTC)
    dojo("due")  # creates the database, syncs the bank, writes the cache
    _history(now)
    Store.open().close()
    runs: dict[str, list[tuple[str, str]]] = {}
    for name, cache in (("lean", tmp_path / "cache"), ("full", tmp_path / "none" / "cache")):
        if name == "full":
            (tmp_path / "none").write_text("")  # a file where the folder should be
        monkeypatch.setenv("DOJO_CACHE", str(cache))
        opened = len(store_opens)
        runs[name] = [dojo("due"), dojo("due", "--json"), dojo("due", "--no-list")]
        assert (len(store_opens) == opened) == (name == "lean"), name
    assert runs["lean"] == runs["full"]
    listing = json.loads(runs["lean"][1][0])
    assert {i["kind"] for i in listing["items"]} == {"review", "new", "redrill", "lab"}
