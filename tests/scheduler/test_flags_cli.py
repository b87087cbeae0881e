"""Flags lead somewhere: `dojo questions flagged`, and flags in export/import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from scheduler.paths import data_dir
from scheduler.store import Store
from trainer.cli import main


def dojo(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def flagged_db() -> None:
    with Store.open(data_dir() / "dojo.sqlite3") as store:
        store.sync_cards([("kv-001", "kv"), ("kv-002", "kv")])
        store.flag("kv-002", "the 7B figure is for fp32, not fp16")


def test_questions_flagged_lists_each_flag_with_its_note(flagged_db: None) -> None:
    out = dojo("questions", "flagged")
    assert "kv-002" in out and "fp32, not fp16" in out and "kv-001" not in out
    (row,) = json.loads(dojo("questions", "flagged", "--json"))
    assert row["question_id"] == "kv-002"
    assert "Cleared 1 flag on kv-002" in dojo("questions", "flagged", "--clear", "kv-002")
    assert "No flagged questions" in dojo("questions", "flagged")


def test_flags_travel_in_the_export_and_import_once(flagged_db: None, tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    dojo("export", str(path))
    data = json.loads(path.read_text())
    assert [f["note"] for f in data["flags"]] == ["the 7B figure is for fp32, not fp16"]
    with Store.open(data_dir() / "dojo.sqlite3") as store:
        store.clear_flags("kv-002")
    dojo("import", str(path))
    dojo("import", str(path))  # idempotent
    with Store.open(data_dir() / "dojo.sqlite3") as store:
        assert [f.note for f in store.flags()] == ["the 7B figure is for fp32, not fp16"]


def test_clearing_a_question_that_has_no_flag_says_so(flagged_db: None) -> None:
    """A mistyped id printed "Cleared 0 flags on kv-02." and exit 0, as if done."""
    result = CliRunner().invoke(main, ["questions", "flagged", "--clear", "kv-02"])
    assert result.exit_code == 2, result.output
    assert "no flag on 'kv-02'" in result.output and "flagged: kv-002" in result.output
    assert "kv-002" in dojo("questions", "flagged")  # nothing cleared
