"""`dojo lab new` ends with the checks docs/extending.md names (it left out test_concepts.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.cli import main


def test_lab_new_names_the_tests_the_checklist_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import trainer.core.lab as core

    monkeypatch.setattr(core, "new_exercise", lambda exercise_id, question: [])
    out = CliRunner().invoke(main, ["lab", "new", "token-bucket"])
    assert out.exit_code == 0, out.output
    docs = (Path(__file__).parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    step = docs[docs.index("4. Check:"):]
    named = re.findall(r"tests/lab/test_\w+\.py", step[:step.index("## ")])
    assert len(named) == 3, named
    for test_file in named:
        assert test_file in out.output, (test_file, out.output)
