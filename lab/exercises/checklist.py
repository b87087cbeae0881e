"""What an exercise folder holds, checked all at once (as rustlings' `dev check`): the list
docs/extending.md gives, the one `dojo lab new` scaffolds, and the one
tests/lab/test_catalogue.py checks for every exercise — one list, `PIECES`.

Read without importing the exercise (its grading may need torch): the files, exercise.toml,
and the names `grading/__init__.py` and `drive.py` define, as text."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from lab.exercises import ExerciseError, load_exercise

# (the file, what it is for): `levelN.py` stands for one module per level of exercise.toml,
# `lab/reference/<module>.py` for the module that `grading.REFERENCE` names.
PIECES: tuple[tuple[str, str], ...] = (
    ("__init__.py", "the package"),
    ("exercise.toml", "id, title, summary, workspace_file, order, one [[level]] per level"),
    ("statement.md", "the task, as `dojo lab show` prints it"),
    ("stub.py", "what `dojo lab start` copies: each function raises NotImplementedError"),
    ("hints.md", "hints, split on `---` lines"),
    ("drive.py", "the child side: run(solution, case, ctx) returns plain data"),
    ("grading/__init__.py", "the parent side: REFERENCE, cases, check (+ expected)"),
    ("grading/levelN.py", "level N's cases (boundaries in its docstring) and checks"),
    ("concepts.toml", "which bank questions each case tests, a \"*\" rule ending each level"),
    ("CONTRACT.md", "per level, a table of the contract's cells, last column `case`"),
    ("lab/reference/<module>.py", "the model answer that grading.REFERENCE names"),
)
REFERENCE = re.compile(r'^REFERENCE\s*=\s*"lab\.reference\.(\w+)"', re.MULTILINE)


def missing_pieces(folder: Path) -> list[str]:
    """Every piece `folder` (`lab/exercises/<pkg>`) lacks, each in one line naming the file and
    what it is for (empty when the folder is complete)."""
    why = dict(PIECES)
    problems = [f"{name}: missing ({why[name]})"
                for name in ("__init__.py", "exercise.toml", "statement.md", "stub.py",
                             "hints.md", "drive.py", "grading/__init__.py", "concepts.toml",
                             "CONTRACT.md")
                if not (folder / name).is_file()]
    if (folder / "grading.py").exists():
        problems.append("grading.py: not allowed; the parent side is a grading/ package "
                        "(one levelN.py per level)")
    if (folder / "statement.md").is_file() and not (folder / "statement.md").read_text(
            encoding="utf-8").strip():
        problems.append("statement.md: empty")
    if (folder / "drive.py").is_file() and not re.search(
            r"^def run\(", (folder / "drive.py").read_text(encoding="utf-8"), re.MULTILINE):
        problems.append("drive.py: defines no run(solution, case, ctx)")
    problems += _reference_problems(folder, why)
    if (folder / "exercise.toml").is_file():
        problems += _level_problems(folder, why)
    return problems


def _reference_problems(folder: Path, why: dict[str, str]) -> list[str]:
    """REFERENCE, set in grading/ (in __init__.py, or a module it takes it from), names a
    reference module that exists."""
    if not (folder / "grading" / "__init__.py").is_file():
        return []
    found = next((m for f in sorted((folder / "grading").glob("*.py"))
                  if (m := REFERENCE.search(f.read_text(encoding="utf-8")))), None)
    if found is None:
        return ['grading/__init__.py: no REFERENCE = "lab.reference.<module>"']
    if not (folder.parent.parent / "reference" / f"{found.group(1)}.py").is_file():
        return [f"lab/reference/{found.group(1)}.py: missing "
                f"({why['lab/reference/<module>.py']})"]
    return []


def _level_problems(folder: Path, why: dict[str, str]) -> list[str]:
    """Per level of exercise.toml: its grading module, its concepts rule, its contract table."""
    try:
        exercise = load_exercise(folder)
    except ExerciseError as exc:
        return [f"exercise.toml: {exc}"]
    problems = [f"grading/level{n}.py: missing ({why['grading/levelN.py']})"
                for n in exercise.level_numbers
                if not (folder / "grading" / f"level{n}.py").is_file()]
    if (folder / "concepts.toml").is_file():
        try:
            rules = tomllib.loads((folder / "concepts.toml").read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            problems.append(f"concepts.toml: {exc}")
        else:
            ruled = {r.get("level") for r in rules.get("rule", []) if "*" in r.get("cases", ())}
            problems += [f"concepts.toml: level {n} has no \"*\" rule"
                         for n in exercise.level_numbers if n not in ruled]
    if (folder / "CONTRACT.md").is_file():
        text = (folder / "CONTRACT.md").read_text(encoding="utf-8")
        problems += [f"CONTRACT.md: no \"## Level {n}\" table"
                     for n in exercise.level_numbers
                     if not re.search(rf"^## Level {n}\b", text, re.MULTILINE)]
    return problems
