"""Graded attempts land in the scheduler's lab attempts table (once `scheduler.store` exists)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.exercises import get
from lab.grader.record import record_attempt
from lab.grader.runner import grade
from tests.lab.conftest import ROOT, SOLUTIONS


def test_grading_works_and_says_so_when_storage_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "scheduler.store", None)  # import fails
    events: list[dict[str, object]] = []
    result = grade(get("kv-bytes"), SOLUTIONS / "correct.py", levels=[1], seed=1,
                   emit=events.append)
    assert result.passed and not result.stored
    assert "scheduler.store is missing" in str(events[-1]["store_error"])


def test_attempts_are_recorded_per_level(dojo_home: Path) -> None:
    store_module = pytest.importorskip("scheduler.store")
    result = grade(get("kv-bytes"), SOLUTIONS / "correct.py", seed=4)
    assert result.stored, result.store_error
    with store_module.Store.open() as store:
        rows = store.lab_attempts("kv-bytes")
    assert [(r.level, r.passed, r.device) for r in rows] == [(1, True, "cpu"), (2, True, "cpu")]
    assert len(rows[0].cases) == len(result.levels[0].results)
    assert all(c["passed"] and c["seed"] == 4 for c in rows[0].cases)
    listed = subprocess.run(
        [sys.executable, "-m", "trainer", "lab", "list"], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True,
    ).stdout
    assert "passing" in listed and "1 attempts" in listed


def test_a_broken_database_does_not_lose_the_report(dojo_home: Path) -> None:
    pytest.importorskip("scheduler.store")
    (dojo_home / "dojo.sqlite3").write_bytes(b"not a database" * 100)
    stored, why = record_attempt("kv-bytes", 1, "cpu", True, [], {}, 0.1)
    assert not stored and "could not store" in why
