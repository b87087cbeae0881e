"""The learner's lab state read afresh, one command's way: each helper opens the database
(`trainer.core.lab.Lab.open`, which also brings older releases' records in), does one thing
through its `LabState` and closes it — what a `dojo lab` command between two steps of a test
would see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.workspace import Interview


def _call(method: str, *args: Any, **kwargs: Any) -> Any:
    from trainer.core.lab import Lab

    with Lab.open() as lab:
        return getattr(lab.state, method)(*args, **kwargs)


def load_state(ex: Exercise) -> dict[str, Any]:
    return _call("load", ex)  # type: ignore[no-any-return]


def solution_path(ex: Exercise, workspace: Path | None = None) -> Path:
    return _call("solution_path", ex, workspace)  # type: ignore[no-any-return]


def interview(ex: Exercise) -> Interview | None:
    return _call("interview", ex)  # type: ignore[no-any-return]


def statement(ex: Exercise) -> str:
    return _call("statement", ex)  # type: ignore[no-any-return]


def hints_shown(ex: Exercise) -> list[str]:
    return _call("hints_shown", ex)  # type: ignore[no-any-return]


def start(ex: Exercise, workspace: Path | None = None, level: int | None = None
          ) -> tuple[Path, bool]:
    return _call("start", ex, workspace, level)  # type: ignore[no-any-return]


def reset(ex: Exercise, workspace: Path | None = None) -> tuple[Path, Path | None]:
    return _call("reset", ex, workspace)  # type: ignore[no-any-return]


def start_interview(ex: Exercise, level: int, minutes: int = 45,
                    workspace: Path | None = None) -> tuple[Path, Interview]:
    return _call("start_interview", ex, level, minutes, workspace)  # type: ignore[no-any-return]


def end_interview(ex: Exercise, workspace: Path | None = None) -> tuple[Path, Path | None]:
    return _call("end_interview", ex, workspace)  # type: ignore[no-any-return]
