"""`dojo lab` as a learner meets it: a scratch file graded without counting as an
attempt, and the next level named only while it is still to pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lab.exercises import discover
from trainer.cli import main


@pytest.mark.slow
def test_lab_list_gives_every_exercise_id_its_column() -> None:
    out = CliRunner().invoke(main, ["lab", "list"])
    assert out.exit_code == 0, out.output
    heads = [line for line in out.output.splitlines() if line and not line.startswith(" ")]
    titles = {ex.id: ex.title for ex in discover()}
    assert len(heads) == len(titles) and "tensor-parallel" in titles
    columns = set()
    for line in heads:
        exercise = line.split()[0]
        columns.add(line.index(titles[exercise]))
        assert line[len(exercise):line.index(titles[exercise])].strip() == ""
    assert len(columns) == 1  # every title starts in one column, past the longest id


BROKEN_FP8 = Path(__file__).parent / "broken" / "fp8_two_bytes.py"
CORRECT = Path(__file__).parent / "solutions" / "correct.py"


def _attempts() -> list[Any]:
    from scheduler.store import Store

    with Store.open() as store:
        return list(store.lab_attempts("kv-bytes"))


def _lab_items() -> list[str]:
    due = json.loads(CliRunner().invoke(main, ["due", "--json"]).output)
    return [i["question_id"] for i in due["items"] if i.get("reason") == "lab"]


def test_a_file_that_is_not_python_is_a_usage_error(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = CliRunner().invoke(main, ["lab", "grade", "kv-bytes", "--file", str(notes)])
    assert out.exit_code == 2
    assert (f"Error: {notes} is not a Python file: --file takes a .py file with the functions "
            "of kv_bytes.py") in out.output


@pytest.mark.slow
def test_a_scratch_file_is_graded_but_not_an_attempt_unless_recorded(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["lab", "start", "kv-bytes"]).exit_code == 0
    from lab.exercises import get
    from tests.lab_state import solution_path

    shutil.copyfile(CORRECT, solution_path(get("kv-bytes")))
    assert runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"]).exit_code == 0
    scratch = tmp_path / "scratch.py"
    scratch.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                       "    return 1\n")
    out = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--file",
                               str(scratch)])
    assert out.exit_code == 1, out.output
    assert ("(not saved: scratch.py is not your workspace file, so this grading is not an "
            "attempt of the level (--record counts it))") in out.output
    assert "added to today's queue" not in out.output
    assert [a.passed for a in _attempts()] == [True]  # still passing, one attempt
    assert "passing" in runner.invoke(main, ["lab", "list"]).output.splitlines()[1]
    recorded = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--file",
                                    str(scratch), "--record"])
    assert recorded.exit_code == 1 and "not saved" not in recorded.output
    assert [a.passed for a in _attempts()] == [True, False]


@pytest.mark.slow
def test_only_wrong_answers_bring_questions_back_from_the_first_grading(
        tmp_path: Path) -> None:
    """A fresh data folder (no `dojo due`, no app run: the questions have no cards yet): the
    first grading with wrong answers brings its questions back; a syntax error and a wrong
    signature bring nothing."""
    runner = CliRunner()
    for body in ("def kv_bytes_per_token(config, dtype, tensor_parallel=1)\n    return 1\n",
                 "def kv_bytes_per_token(config):\n    return 1\n"):
        broken = tmp_path / "kv_bytes.py"
        broken.write_text(body)
        out = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--file",
                                   str(broken), "--record"])
        assert out.exit_code == 1 and "added to today's queue" not in out.output, out.output
    from scheduler.store import Store

    with Store.open() as store:  # a learner's fresh home: questions without card rows
        assert store.today_queue().lab == ()
        assert store.missing_cards(["kv-cache-009"]) == ["kv-cache-009"]
    out = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1", "--file",
                               str(BROKEN_FP8), "--record"])
    assert out.exit_code == 1
    assert "added to today's queue" in out.output, out.output
    assert "kv-cache-009" in _lab_items()


@pytest.mark.slow
def test_the_next_level_is_named_only_when_it_is_still_to_pass() -> None:
    from lab.exercises import get
    from tests.lab_state import solution_path

    runner = CliRunner()
    assert runner.invoke(main, ["lab", "start", "kv-bytes"]).exit_code == 0
    shutil.copyfile(CORRECT, solution_path(get("kv-bytes")))
    first = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert first.exit_code == 0
    assert "Level 1 passed — next: Level 2 (" in first.output  # still to pass: named
    assert runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "2"]).exit_code == 0
    again = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert again.exit_code == 0 and "next:" not in again.output  # level 2 has passed


@pytest.mark.slow
def test_no_next_level_is_named_during_an_interview_rehearsal() -> None:
    from lab.exercises import get
    from tests.lab_state import solution_path

    runner = CliRunner()
    assert runner.invoke(main, ["lab", "start", "kv-bytes", "--level", "1",
                                "--interview"]).exit_code == 0
    shutil.copyfile(CORRECT, solution_path(get("kv-bytes")))
    during = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert during.exit_code == 0 and "first pass" in during.output
    assert "next:" not in during.output  # level 2 is still to pass, but not now
