"""Interview rehearsal: `dojo lab start ID --level N --interview` moves the learner's file
aside (restorable), gives a fresh stub and a clock, turns hints off, hides hints sections of
the statement, and each grading of the level is recorded with the clock; `restore` brings the
learner's file back and keeps the rehearsal's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lab.exercises import get
from tests.lab_state import interview, solution_path, start_interview, statement
from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOJO_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.slow
def test_interview_round_trip(home: Path) -> None:
    runner = CliRunner()
    ex = get("kv-bytes")
    assert runner.invoke(main, ["lab", "start", "kv-bytes"]).exit_code == 0
    mine = solution_path(ex)
    mine.write_text(mine.read_text() + "\n# my own work\n")

    started = runner.invoke(main, ["lab", "start", "kv-bytes", "--level", "2", "--interview",
                                   "--minutes", "30"])
    assert started.exit_code == 0, started.output
    assert "30 minutes, hints off" in started.output and "moved aside" in started.output
    assert "# my own work" not in mine.read_text()  # a fresh stub
    hint = runner.invoke(main, ["lab", "hint", "kv-bytes"])
    assert hint.exit_code == 1 and "hints are off" in hint.output

    failing = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "2"])
    assert failing.exit_code == 1
    assert "of 30:00 · grading 1" in failing.output and "first pass" not in failing.output
    shutil.copyfile(ROOT / "lab/reference/kv_bytes.py", mine)
    passing = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "2"])
    assert passing.exit_code == 0
    assert "grading 2 · first pass at 0:0" in passing.output

    from scheduler.store import Store

    with Store.open() as store:
        attempts = list(store.lab_attempts("kv-bytes"))
    assert [a.metrics["interview_grading"] for a in attempts] == [1.0, 2.0]
    assert all(a.metrics["interview_minutes"] == 30.0 for a in attempts)
    session = interview(ex)
    assert session is not None and session.first_pass_s is not None and session.gradings == 2

    restored = runner.invoke(main, ["lab", "restore", "kv-bytes"])
    assert restored.exit_code == 0, restored.output
    assert "# my own work" in mine.read_text() and interview(ex) is None
    kept = [p for p in (home / "lab" / "kv-bytes" / "backups").iterdir()
            if "-interview-" in p.name]
    assert kept and "def kv_bytes_per_token" in kept[0].read_text()
    assert runner.invoke(main, ["lab", "restore", "kv-bytes"]).exit_code == 2  # nothing running


def test_hints_sections_are_hidden_during_a_rehearsal(home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ex = get("kv-bytes")
    text = "# T\nbody\n## Hints\nuse bits\n## Levels\nL1\n"
    monkeypatch.setattr(type(ex), "statement", lambda self: text)
    assert statement(ex) == text
    start_interview(ex, 1, 45)
    assert statement(ex) == "# T\nbody\n## Levels\nL1"


@pytest.mark.slow
def test_other_levels_and_other_files_are_not_counted(home: Path) -> None:
    runner = CliRunner()
    ex = get("kv-bytes")
    start_interview(ex, 2, 45)
    other = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert "interview:" not in other.output
    elsewhere = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "2", "--file",
                                     str(ROOT / "tests/lab/solutions/correct.py")])
    assert "interview:" not in elsewhere.output
    session = interview(ex)
    assert session is not None and session.gradings == 0
    with pytest.raises(ValueError, match="positive"):
        start_interview(ex, 2, 0)
