"""A `dojo lab` command opens the learner's database once: the lab state, the attempts and
the lab cards all come through the one `trainer.core.lab.Lab` it holds (before: 19-26 opens
for one `dojo lab list`, 4 for one `dojo lab grade`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scheduler.store import Store
from trainer.cli import main


@pytest.fixture()
def opens(dojo_home: Path, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every Store.open from now on (its read_only flag)."""
    calls: list[bool] = []
    real = Store.open.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Store], *args: Any, **kwargs: Any) -> Store:
        calls.append(bool(kwargs.get("read_only")))
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Store, "open", classmethod(counting))
    return calls


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.slow
def test_lab_list_opens_the_store_once(opens: list[bool]) -> None:
    assert _run("lab", "start", "kv-bytes").exit_code == 0
    assert _run("lab", "hint", "kv-bytes").exit_code == 0  # some state to read back
    opens.clear()
    listed = _run("lab", "list")
    assert listed.exit_code == 0 and "kv-bytes" in listed.output
    assert "started" in listed.output
    assert opens == [False]


@pytest.mark.slow
def test_lab_grade_opens_the_store_once(opens: list[bool]) -> None:
    assert _run("lab", "start", "kv-bytes").exit_code == 0
    opens.clear()
    graded = _run("lab", "grade", "kv-bytes", "--level", "1", "--seed", "1")
    assert graded.exit_code == 1, graded.output  # the stub fails, and the attempt is stored
    assert opens == [False]
    with Store.open() as store:
        assert [(a.level, a.passed) for a in store.lab_attempts("kv-bytes")] == [(1, False)]
