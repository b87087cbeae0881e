"""The exercise catalogue: one package per exercise, `lab/exercises/<id_with_underscores>/`.

Each package holds `exercise.toml`, `statement.md`, `stub.py`, `hints.md` (hints separated by a
line containing only `---`), `drive.py` (runs in the learner's sandbox) and the `grading/` package
(runs in the grader only; one `levelN.py` per level) — the contract is in lab/README.md.
Discovery only reads TOML and Markdown; the grading package (which may need torch) is imported on
demand by `Exercise.grading()`.

`exercise.toml`::

    id = "kv-bytes"
    title = "KV-cache bytes"
    summary = "one line"
    workspace_file = "kv_bytes.py"
    needs_torch = false          # optional, default true: device "auto" then never imports torch
    memory_mb = 1024             # optional sandbox memory cap (default 4096)
    run_timeout_s = 300          # optional wall-clock budget for a whole grading run
    load_timeout_s = 30          # optional: starting the sandbox and importing the learner's file
    timing_repeats = 7           # optional: measured runs per timed case (after timing_warmup)
    timing_warmup = 2            # optional: unmeasured warm-up runs per timed case
    dtype = "float32"            # optional: RunContext.dtype
    requires = ["triton"]        # optional: modules the learner's code imports beyond torch; where
                                 # one is not installed the exercise is listed as unavailable,
                                 # with the reason, and grading it is refused
    [models]                     # optional: RunContext.model_paths (relative to the repo root)
    tiny = "lab/models/tiny"

    [[level]]
    number = 1
    title = "..."
    summary = "..."
    needs_torch = false          # optional: this level of a torch exercise never touches torch,
                                 # so grading only such levels starts no torch (a faster child)
    [level.gate]                 # optional: "<metric>_max" / "<metric>_min" bounds, e.g.
    p95_ratio_max = 1.5          # every timed case's p95 time ratio to the reference <= 1.5
    [level.case_gate.L2-timed-history]  # optional: one timed case's own bounds instead of the
    median_ratio_max = 3.5              # level's (each timed case sized for the class it catches)
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from lab.grader.api import GradingModule

EXERCISES_DIR = Path(__file__).resolve().parent
DEFAULT_MEMORY_MB = 4096
DEFAULT_RUN_TIMEOUT_S = 600.0
DEFAULT_LOAD_TIMEOUT_S = 60.0
REPO_ROOT = EXERCISES_DIR.parents[1]
INSTALL_NOTES = {  # why a required module may be missing, and what to do
    "triton": "Triton publishes wheels for Linux on x86-64 and aarch64 only, where torch's own "
              "dependency installs it; elsewhere grade on a Linux machine",
}


class ExerciseError(Exception):
    """A malformed exercise folder or an unknown exercise id (message says which and why)."""


@dataclass(frozen=True)
class Level:
    number: int
    title: str
    summary: str = ""
    gate: dict[str, float] = field(default_factory=dict)
    needs_torch: bool | None = None  # None: as the exercise says
    case_gates: dict[str, dict[str, float]] = field(default_factory=dict)

    def gate_for(self, case_id: str) -> dict[str, float]:
        """The bounds a case is judged by: its own `case_gate`, else the level's gate."""
        return self.case_gates.get(case_id, self.gate)

    def gate_text(self) -> str:
        """Every gate of the level in one line ("median_ratio_max 4.5; L2-timed-history:
        median_ratio_max 3.5"), as `dojo lab list` shows them."""
        def bounds(gate: dict[str, float]) -> str:
            return ", ".join(f"{k} {v:g}" for k, v in gate.items())

        return "; ".join([bounds(self.gate)] * bool(self.gate)
                         + [f"{case}: {bounds(g)}" for case, g in self.case_gates.items()])


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    summary: str
    workspace_file: str
    levels: tuple[Level, ...]
    path: Path
    module: str  # importable package, e.g. "lab.exercises.kv_bytes"
    needs_torch: bool = True
    memory_mb: int = DEFAULT_MEMORY_MB
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S
    load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S
    timing_repeats: int = 7
    timing_warmup: int = 2
    dtype: str = "float32"
    model_paths: dict[str, str] | None = None
    model_roles: tuple[str, ...] = ()  # checkpoints a learner may swap in (--target/--draft)
    order: int = 100  # catalogue position: the warm-up exercise first, the big rounds after
    requires: tuple[str, ...] = ()  # modules beyond torch the learner's code imports

    def unavailable(self) -> str | None:
        """Why this exercise cannot be graded here (a required module is not installed), or
        None. Only looks the modules up (no import: listing the catalogue stays cheap)."""
        import importlib.util

        for name in self.requires:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                return (f"needs {name}, which is not installed here"
                        + (f" ({INSTALL_NOTES[name]})" if name in INSTALL_NOTES else ""))
        return None

    @property
    def stub_path(self) -> Path:
        return self.path / "stub.py"

    def needs_torch_for(self, levels: list[int]) -> bool:
        """Whether grading `levels` needs torch: the exercise does, and one of them does not
        opt out (pure-Python levels of a model lab then skip the child's torch import)."""
        return self.needs_torch and any(self.level(n).needs_torch is not False for n in levels)

    @property
    def level_numbers(self) -> list[int]:
        return [lvl.number for lvl in self.levels]

    def level(self, number: int) -> Level:
        for lvl in self.levels:
            if lvl.number == number:
                return lvl
        raise ExerciseError(
            f"{self.id} has no level {number} (levels: {', '.join(map(str, self.level_numbers))})"
        )

    def statement(self) -> str:
        return (self.path / "statement.md").read_text(encoding="utf-8")

    def hints(self) -> list[str]:
        """Hints in order; the file separates them with lines containing only `---`."""
        path = self.path / "hints.md"
        if not path.exists():
            return []
        hints: list[str] = []
        current: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() == "---":
                hints.append("\n".join(current).strip())
                current = []
            else:
                current.append(line)
        hints.append("\n".join(current).strip())
        return [h for h in hints if h]

    def grading(self) -> GradingModule:
        """Import the grading spec (may import torch if the exercise needs it)."""
        return cast(GradingModule, importlib.import_module(f"{self.module}.grading"))


def load_exercise(path: Path, module: str | None = None) -> Exercise:
    """Read one exercise folder; `module` defaults to `lab.exercises.<folder name>`."""
    toml_path = path / "exercise.toml"
    try:
        data: dict[str, Any] = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ExerciseError(f"{toml_path}: {exc}") from exc
    try:
        levels = tuple(
            sorted(
                (
                    Level(
                        number=int(lvl["number"]),
                        title=str(lvl["title"]),
                        summary=str(lvl.get("summary", "")),
                        gate={str(k): float(v) for k, v in lvl.get("gate", {}).items()},
                        case_gates={str(c): {str(k): float(v) for k, v in g.items()}
                                    for c, g in lvl.get("case_gate", {}).items()},
                        needs_torch=(bool(lvl["needs_torch"]) if "needs_torch" in lvl
                                     else None),
                    )
                    for lvl in data["level"]
                ),
                key=lambda lvl: lvl.number,
            )
        )
        exercise = Exercise(
            id=str(data["id"]),
            title=str(data["title"]),
            summary=str(data.get("summary", "")),
            workspace_file=str(data["workspace_file"]),
            levels=levels,
            path=path.resolve(),
            module=module or f"lab.exercises.{path.name}",
            needs_torch=bool(data.get("needs_torch", True)),
            memory_mb=int(data.get("memory_mb", DEFAULT_MEMORY_MB)),
            run_timeout_s=float(data.get("run_timeout_s", DEFAULT_RUN_TIMEOUT_S)),
            load_timeout_s=float(data.get("load_timeout_s", DEFAULT_LOAD_TIMEOUT_S)),
            timing_repeats=int(data.get("timing_repeats", 7)),
            timing_warmup=int(data.get("timing_warmup", 2)),
            dtype=str(data.get("dtype", "float32")),
            order=int(data.get("order", 100)),
            model_roles=tuple(str(r) for r in data.get("model_roles", ())),
            requires=tuple(str(r) for r in data.get("requires", ())),
            model_paths={str(k): str((REPO_ROOT / str(v)).resolve())
                         for k, v in data["models"].items()} if "models" in data else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ExerciseError(f"{toml_path}: missing or invalid field {exc}") from exc
    if not levels:
        raise ExerciseError(f"{toml_path}: no [[level]] tables")
    if Path(exercise.workspace_file).name != exercise.workspace_file:
        raise ExerciseError(f"{toml_path}: workspace_file must be a plain file name")
    return exercise


def discover(root: Path = EXERCISES_DIR) -> list[Exercise]:
    """Every exercise package under `root`, in catalogue order (`order`, then id)."""
    found = [
        load_exercise(child)
        for child in sorted(root.iterdir())
        if child.is_dir() and (child / "exercise.toml").exists()
    ]
    return sorted(found, key=lambda ex: (ex.order, ex.id))


def get(exercise_id: str, root: Path = EXERCISES_DIR) -> Exercise:
    """Look an exercise up by id (`kv-bytes`); the underscore folder name is accepted too."""
    exercises = discover(root)
    for ex in exercises:
        if exercise_id in (ex.id, ex.path.name):
            return ex
    known = ", ".join(ex.id for ex in exercises) or "none"
    raise ExerciseError(f"unknown exercise {exercise_id!r} (known: {known})")
