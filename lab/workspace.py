"""The learner's side of the lab on disk: workspace files and hint progress.

Per exercise, `data_dir()/lab/<id>/` holds `state.json` (where the workspace is, how many hints
were shown — graded results live in the attempts table, see `lab.grader.record`) and `backups/`;
the workspace file itself lives there too unless `--workspace DIR` chose another folder, which
`state.json` then remembers.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.exercises import Exercise


def lab_dir(exercise: Exercise) -> Path:
    from scheduler.paths import data_dir

    path = data_dir() / "lab" / exercise.id
    path.mkdir(parents=True, exist_ok=True)
    return path


def _state_path(exercise: Exercise) -> Path:
    return lab_dir(exercise) / "state.json"


def load_state(exercise: Exercise) -> dict[str, Any]:
    path = _state_path(exercise)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(exercise: Exercise, state: dict[str, Any]) -> None:
    path = _state_path(exercise)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)  # atomic: a crash never leaves half a state file


def solution_path(exercise: Exercise, workspace: Path | None = None) -> Path:
    """The learner's file: `--workspace DIR` if given, else the remembered one, else the default."""
    if workspace is not None:
        return workspace.expanduser().resolve() / exercise.workspace_file
    remembered = load_state(exercise).get("workspace")
    if remembered:
        return Path(remembered) / exercise.workspace_file
    return lab_dir(exercise) / exercise.workspace_file


def start(exercise: Exercise, workspace: Path | None = None,
          level: int | None = None) -> tuple[Path, bool]:
    """Copy the stub into the workspace; never overwrites. Returns (path, created).

    `level` (default: the first) is remembered as started, so `dojo lab list` marks only the
    levels the learner actually opened (one file holds every level of an exercise)."""
    path = solution_path(exercise, workspace)
    state = load_state(exercise)
    state["workspace"] = str(path.parent)
    opened = set(levels_started(exercise, state))
    opened.add(level if level is not None else exercise.level_numbers[0])
    state["levels_started"] = sorted(opened)
    save_state(exercise, state)
    if path.exists():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(exercise.stub_path, path)
    return path, True


def reset(exercise: Exercise, workspace: Path | None = None) -> tuple[Path, Path | None]:
    """Back the current file up under `backups/`, then put a fresh stub in its place."""
    path = solution_path(exercise, workspace)
    backup: Path | None = None
    if path.exists():
        backups = lab_dir(exercise) / "backups"
        backups.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = backups / f"{path.stem}-{stamp}{path.suffix}"
        n = 1
        while backup.exists():
            backup = backups / f"{path.stem}-{stamp}-{n}{path.suffix}"
            n += 1
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(exercise.stub_path, path)
    return path, backup


@dataclass(frozen=True)
class Hint:
    number: int
    total: int
    text: str


def next_hint(exercise: Exercise) -> Hint | None:
    """Reveal the next hint and remember it; None when every hint has been shown."""
    hints = exercise.hints()
    state = load_state(exercise)
    shown = int(state.get("hints_shown", 0))
    if shown >= len(hints):
        return None
    state["hints_shown"] = shown + 1
    save_state(exercise, state)
    return Hint(shown + 1, len(hints), hints[shown])


def hints_shown(exercise: Exercise) -> list[str]:
    return exercise.hints()[: int(load_state(exercise).get("hints_shown", 0))]


def levels_started(exercise: Exercise, state: dict[str, Any] | None = None) -> list[int]:
    """Levels the learner started (`start --level`); a workspace from before levels were
    remembered counts as level 1 started."""
    state = load_state(exercise) if state is None else state
    remembered = state.get("levels_started")
    if isinstance(remembered, list):
        return [n for n in remembered if isinstance(n, int)]
    return [exercise.level_numbers[0]] if solution_path(exercise).exists() else []
