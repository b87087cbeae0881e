"""`dojo lab` as a learner meets it (#45 items 5 and 9)."""

from __future__ import annotations

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
