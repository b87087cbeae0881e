"""`dojo lab new ID`: a new exercise folder with every piece of `lab.exercises.checklist.PIECES`,
one working level (a stub that fails, a reference that passes, seeded hidden cases, a contract
table and a concepts rule), so the catalogue tests pass as it stands and the author replaces
the example's function with the real one."""

from __future__ import annotations

import re
from pathlib import Path

from lab.exercises import discover

EXERCISES_DIR = Path(__file__).resolve().parent
REFERENCE_DIR = EXERCISES_DIR.parent / "reference"
ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class ScaffoldError(ValueError):
    """An id that cannot become an exercise (the message says why)."""


def _files(exercise_id: str, module: str, order: int, question: str) -> dict[str, str]:
    return {**_package_files(exercise_id, module, order),
            **_grading_files(exercise_id, module), **_contract_files(exercise_id, question)}


def _package_files(exercise_id: str, module: str, order: int) -> dict[str, str]:
    """The exercise's own files: what the learner reads and edits, and the child's side."""
    title = exercise_id.replace("-", " ").capitalize()
    return {
        "__init__.py": f'"""The `{exercise_id}` exercise."""\n',
        "exercise.toml": f'''id = "{exercise_id}"
title = "{title}"
summary = "One line on what the learner builds (shown by `dojo lab list`)."
workspace_file = "{module}.py"
order = {order}
needs_torch = false
memory_mb = 1024
run_timeout_s = 120
load_timeout_s = 15

[[level]]
number = 1
title = "Double it"
summary = "The example level: replace it with the first real one."
''',
        "statement.md": f'''# {title}

The task, as `dojo lab show {exercise_id}` prints it: what to implement, its inputs and
outputs, the edge cases that matter.

## Level 1: Double it

`double(x)` returns `2 * x` for any integer `x`.
''',
        "stub.py": '''"""Your solution: `dojo lab grade` grades this file."""


def double(x: int) -> int:
    """Twice `x`."""
    raise NotImplementedError("level 1: double(x)")
''',
        "hints.md": "Multiply by two.\n\n---\n\nNegative numbers double the same way.\n",
        "drive.py": '''"""Child side: the learner's code on a case's inputs, plain data back."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from lab.grader.api import Case, RunContext


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    return solution.double(case.params["x"])
''',
    }


def _grading_files(exercise_id: str, module: str) -> dict[str, str]:
    """The parent side: the grading package and its one level."""
    return {
        "grading/__init__.py": f'''"""Grading for `{exercise_id}` (parent side)."""

from __future__ import annotations

from typing import Any

from lab.exercises.{module}.grading import level1
from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.{module}"
LEVELS: dict[int, Any] = {{1: level1}}


def cases(level: int, seed: int) -> list[Case]:
    if level not in LEVELS:
        raise ValueError(f"{exercise_id} has no level {{level}}")
    out: list[Case] = LEVELS[level].cases(seed)
    return out


def check(case: Case, got: object, expected: object) -> Verdict:
    verdict: Verdict = LEVELS[case.level].check(case, got, expected)
    return verdict
''',
        "grading/level1.py": '''"""Level 1: double an integer. Boundaries: zero, one, a negative;
seeded hidden values."""

from __future__ import annotations

import random

from lab.grader.api import Case, Verdict


def cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    fixed = [Case("zero", 1, {"x": 0}, size=1), Case("one", 1, {"x": 1}, size=1),
             Case("negative", 1, {"x": -3}, size=1)]
    hidden = [Case(f"hidden-{i}", 1, {"x": rng.randint(-1000, 1000)}, size=2)
              for i in range(3)]
    return fixed + hidden


def check(case: Case, got: object, expected: object) -> Verdict:
    if got == expected:
        return Verdict(True)
    return Verdict(False, f"double({case.params['x']}): expected {expected!r}, got {got!r}")
''',
    }



def _contract_files(exercise_id: str, question: str) -> dict[str, str]:
    """What the cases test (concepts.toml) and the contract they cover (CONTRACT.md)."""
    return {
        "concepts.toml": f'''# Which bank questions each case tests: the first matching rule wins;
# end each level with a "*" rule.
[[rule]]
level = 1
cases = ["*"]
questions = ["{question}"]
''',
        "CONTRACT.md": f'''# {exercise_id}: the contract, cell by cell

## Level 1

| input | cell | case |
|---|---|---|
| x | zero | `zero` |
| x | one | `one` |
| x | negative | `negative` |
''',
    }

def scaffold(exercise_id: str, question: str) -> list[Path]:
    """Write the new exercise's folder and its reference; returns the files written. Refuses
    (ScaffoldError) an id that is not lower-case words joined by hyphens, or one taken."""
    if not ID.match(exercise_id):
        raise ScaffoldError(f"{exercise_id!r}: an exercise id is lower-case words joined by "
                            "hyphens, e.g. prefix-cache")
    module = exercise_id.replace("-", "_")
    folder = EXERCISES_DIR / module
    reference = REFERENCE_DIR / f"{module}.py"
    known = discover()
    for taken in (folder, reference):
        if taken.exists():
            raise ScaffoldError(f"{taken} exists already: choose another id")
    if any(ex.id == exercise_id for ex in known):
        raise ScaffoldError(f"{exercise_id} is an exercise already")
    order = max((ex.order for ex in known), default=0) + 1
    written = []
    for name, text in _files(exercise_id, module, order, question).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    reference.write_text(f'"""The model answer for `{exercise_id}`."""\n\n\n'
                         "def double(x: int) -> int:\n    return 2 * x\n", encoding="utf-8")
    return [*written, reference]
