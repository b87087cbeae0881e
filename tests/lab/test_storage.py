"""Graded attempts are recorded once, by the lab service, from the judge's own result (the
judge stores nothing); status and best figures for `dojo lab list` and the lab screen come from
the attempts table only."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.exercises import get
from lab.grader.events import Event, RunStarted, Summary
from lab.grader.runner import GradeOptions, grade
from tests.lab.conftest import ROOT, SOLUTIONS
from trainer.core.attempts import Recorder, level_summaries, summarize_level
from trainer.core.lab import Lab, grade_recorded


class FakeStore:
    """An injected store: everything `trainer.core.attempts.AttemptStore` asks for, in memory."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.cards: list[tuple[str, int, bool]] = []
        self.open_transactions = 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.open_transactions += 1
        try:
            yield
        finally:
            self.open_transactions -= 1

    def grade_lab_card(self, exercise: str, level: int, quality: int, *, passed: bool,
                       rebuild: bool, pass_s: float | None = None,
                       gradings: int | None = None) -> Any:
        assert self.open_transactions == 2  # inside the attempts' transaction, as a savepoint
        self.cards.append((exercise, level, passed))
        return SimpleNamespace(card=None)

    def add_lab_recalls(self, items: Any) -> list[str]:
        return []

    def record_lab_attempt(self, **row: Any) -> int:
        self.rows.append(row)
        return len(self.rows)

    def lab_attempts(self, exercise: str | None = None) -> list[Any]:
        return [SimpleNamespace(**r) for r in self.rows
                if exercise is None or r["exercise"] == exercise]


def _injected(store: FakeStore) -> Recorder:
    return Recorder(store)


def _stored(result: Any) -> tuple[bool, str]:
    summary = result.events[-1]
    assert isinstance(summary, Summary)
    return summary.stored, summary.store_error


def test_the_judge_stores_nothing_and_says_so(dojo_home: Path) -> None:
    emitted: list[Event] = []
    result = grade(get("kv-bytes"), SOLUTIONS / "correct.py", GradeOptions(
        levels=[1], seed=4, emit=emitted.append))
    assert emitted == result.events  # grade() returns exactly what it wrote
    assert result.passed and _stored(result) == (False, "")
    assert not (dojo_home / "dojo.sqlite3").exists()


def test_grade_records_each_level_once_through_the_injected_store() -> None:
    store = FakeStore()
    emitted: list[Event] = []
    result = grade_recorded(get("kv-bytes"), SOLUTIONS / "correct.py", GradeOptions(
        seed=4, emit=emitted.append), _injected(store))
    assert emitted == result.events  # the summary sent after recording is the one returned
    assert isinstance(result.events[0], RunStarted) and isinstance(result.events[-1], Summary)
    assert [type(e) for e in emitted].count(Summary) == 1
    assert _stored(result) == (True, "")
    assert [(r["level"], r["passed"], r["device"]) for r in store.rows] == [
        (1, True, "cpu"), (2, True, "cpu")]
    assert len(store.rows[0]["cases"]) == len(result.levels[0].results)
    # each pass graded its lab card through the same injected store, in the same transaction
    assert store.cards == [("kv-bytes", 1, True), ("kv-bytes", 2, True)]
    assert all(c["passed"] and c["seed"] == 4 for c in store.rows[0]["cases"])
    summaries = level_summaries(store.lab_attempts("kv-bytes"))
    assert summaries[1].status == "passing"


def test_status_and_best_figures_come_from_the_attempts() -> None:
    def attempt(passed: bool, ok_cases: int, ratio: float | None = None) -> SimpleNamespace:
        cases = [{"passed": i < ok_cases} for i in range(4)]
        metrics = {} if ratio is None else {"median_ratio": ratio}
        return SimpleNamespace(passed=passed, cases=cases, metrics=metrics, device="cpu")

    s = summarize_level([attempt(True, 4, 1.3), attempt(True, 4, 1.1), attempt(False, 2, 0.5)])
    assert s.status == "failing" and s.ever_passed and s.attempts == 3
    assert s.best_passed_cases == 4 and s.cases == 4
    assert s.best_metrics == {"median_ratio": (1.1, "cpu")}  # a failed attempt's figure is no best
    assert summarize_level([]).status == "not graded"


class BrokenStore(FakeStore):
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        raise OSError("disk on fire")
        yield


def test_grading_works_and_says_so_when_storage_fails() -> None:
    result = grade_recorded(get("kv-bytes"), SOLUTIONS / "correct.py",
                            GradeOptions(levels=[1], seed=1), Recorder(BrokenStore()))
    stored, why = _stored(result)
    assert result.passed and not stored
    assert "could not store the attempt: OSError: disk on fire" in why


@pytest.mark.slow
def test_attempts_land_in_the_database_and_lab_list_reads_them(dojo_home: Path) -> None:
    store_module = pytest.importorskip("scheduler.store")
    with Lab.open() as lab:
        graded = lab.grade(get("kv-bytes"), SOLUTIONS / "correct.py", None, "auto", 4, None,
                           record=True)
    assert _stored(graded.result)[0], _stored(graded.result)[1]
    with store_module.Store.open() as store:
        rows = store.lab_attempts("kv-bytes")
    assert [(r.level, r.passed) for r in rows] == [(1, True), (2, True)]
    listed = subprocess.run(
        [sys.executable, "-m", "trainer", "lab", "list"], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True,
    ).stdout
    assert "passing" in listed and "1 attempt " in listed and "1 attempts" not in listed
    state = dojo_home / "lab" / "kv-bytes" / "state.json"
    assert not state.exists() or "levels" not in json.loads(state.read_text())


def test_a_broken_database_does_not_lose_the_report(dojo_home: Path) -> None:
    pytest.importorskip("scheduler.store")
    (dojo_home / "dojo.sqlite3").write_bytes(b"not a database" * 100)
    with Lab.open() as lab:
        assert lab.store is None and lab.error is not None
        graded = lab.grade(get("kv-bytes"), SOLUTIONS / "correct.py", [1], "auto", 1, None,
                           record=True)
    stored, why = _stored(graded.result)
    assert graded.passed and not stored and "could not store" in why


def test_workspace_state_lives_in_the_database_and_a_state_json_is_imported_once(
    dojo_home: Path,
) -> None:
    """state.json sits in the workspace folder the learner's code may write; what the
    app trusts is read from the database, and an older release's file only once."""
    from tests import lab_state as workspace

    ex = get("kv-bytes")
    folder = dojo_home / "lab" / ex.id
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"hints_shown": 1}))
    assert workspace.load_state(ex) == {"hints_shown": 1}  # imported
    (folder / "state.json").write_text(json.dumps({"hints_shown": 5, "workspace": "/elsewhere"}))
    assert workspace.load_state(ex) == {"hints_shown": 1}  # never read again
    assert workspace.solution_path(ex) == folder / ex.workspace_file


def test_a_state_json_link_is_not_followed(dojo_home: Path, tmp_path: Path) -> None:
    from tests import lab_state as workspace

    ex = get("kv-bytes")
    folder = dojo_home / "lab" / ex.id
    folder.mkdir(parents=True)
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"workspace": str(tmp_path), "hints_shown": 3}))
    (folder / "state.json").symlink_to(planted)
    assert workspace.load_state(ex) == {}
    assert workspace.solution_path(ex) == folder / ex.workspace_file
