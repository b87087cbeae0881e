"""A grading's attempt and the lab card its pass implies are one transaction: a process
killed between them (SIGKILL, a real subprocess) leaves both or neither, and an older version's
leftover (a passed level without a card) is repaired on open."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from scheduler.faults import ENV as CRASH_ENV
from scheduler.store import Store
from trainer.core.attempts import Recorder

ROOT = Path(__file__).resolve().parents[2]

# A passing grading of kv-bytes level 1, recorded by the real Recorder into the file argv[1].
CHILD = """
import sys
from pathlib import Path
from types import SimpleNamespace as N
from trainer.core.attempts import Recorder
from scheduler.store import Store

case = N(id="c1", required=True)
level = N(level=1, results=[N(case=case, passed=True, kind="correctness", metrics=None)],
          passed=True, metrics=lambda: {}, duration_s=0.1)
result = N(exercise="kv-bytes", device="cpu", seed=1, levels=[level], attempt_metrics={})
with Store.open(Path(sys.argv[1]), auto_backup=False) as store:
    recorder = Recorder(store)
    print(recorder.record(result), [r.created for r in recorder.card_results])
"""


def _grade_in_child(db: Path, crash_at: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(CRASH_ENV, None)
    if crash_at is not None:
        env[CRASH_ENV] = crash_at
    return subprocess.run([sys.executable, "-c", CHILD, str(db)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _counts(db: Path) -> tuple[int, int]:
    """(attempts, lab cards) as the file holds them, read raw: Store.open would repair."""
    conn = sqlite3.connect(db)
    try:
        return (conn.execute("SELECT count(*) FROM lab_attempts").fetchone()[0],
                conn.execute("SELECT count(*) FROM lab_cards").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.slow
def test_a_grading_killed_between_attempt_and_card_leaves_both_or_neither(
        tmp_path: Path) -> None:
    db = tmp_path / "dojo.sqlite3"
    Store.open(db).close()
    killed = _grade_in_child(db, "lab-attempt-stored")
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # it died at that very point
    assert _counts(db) == (0, 0)  # neither (when they were two writes: the attempt, no card)

    done = _grade_in_child(db, None)
    assert done.returncode == 0, done.stderr
    assert "(True, '')" in done.stdout and "[True]" in done.stdout
    assert _counts(db) == (1, 1)  # both


def _attempt(store: Store, passed: bool, now: dt.datetime) -> None:
    store.record_lab_attempt("kv-bytes", 1, "cpu", passed, [{"id": "c1", "passed": passed}],
                             {}, 0.1, now=now)


def test_a_passed_level_without_a_card_gets_one_on_open(tmp_path: Path) -> None:
    db = tmp_path / "dojo.sqlite3"
    first = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
    with Store.open(db) as store:
        store.update_settings(timezone="UTC")
        _attempt(store, False, first - dt.timedelta(hours=1))
        _attempt(store, True, first)  # an older version crashed here, before the card
        _attempt(store, True, first + dt.timedelta(days=3))
        _attempt(store, False, first)  # kv-bytes L1 only; a failed level needs no card
        assert store.lab_card("kv-bytes", 1) is None
    with Store.open(db, auto_backup=False) as store:
        card = store.lab_card("kv-bytes", 1)
        assert card is not None, "the passed level was not repaired"
        assert card.due == dt.date(2026, 3, 3)  # its first pass made it a card, due next day
        assert card.state.repetitions == 1 and card.last_reviewed_day == dt.date(2026, 3, 2)
        assert card.last_passed_at == first + dt.timedelta(days=3)
        assert any("repaired: kv-bytes L1" in w for w in store.warnings)
        assert len(store.lab_cards()) == 1
    with Store.open(db, auto_backup=False) as store:  # once repaired, nothing more to say
        assert not any("repaired" in w for w in store.warnings)


def test_a_card_that_fails_rolls_back_alone_and_the_attempt_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "dojo.sqlite3"
    Store.open(db).close()
    real = Store.grade_lab_card

    def half_then_fail(self: Store, *args: Any, **kwargs: Any) -> Any:
        real(self, *args, **kwargs)  # writes the card inside the savepoint...
        raise RuntimeError("card bug")  # ...which must then be undone alone

    monkeypatch.setattr(Store, "grade_lab_card", half_then_fail)
    case = SimpleNamespace(id="c1", required=True)
    level = SimpleNamespace(
        level=1, passed=True, metrics=lambda: {}, duration_s=0.1,
        results=[SimpleNamespace(case=case, passed=True, kind="correctness", metrics=None)])
    result: Any = SimpleNamespace(exercise="kv-bytes", device="cpu", seed=1, levels=[level],
                                  attempt_metrics={})
    with Store.open(db, auto_backup=False) as store:
        recorder = Recorder(store)
        assert recorder.record(result) == (True, "")
    assert "card bug" in recorder.card_error and recorder.card_results == []
    assert _counts(db) == (1, 0)
