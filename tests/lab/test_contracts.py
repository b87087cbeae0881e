"""Every exercise enumerates its contract per level (lab/exercises/<pkg>/CONTRACT.md): each cell
names cases that exist at that level whatever the seed, and each fixed case of a level (same
inputs at every seed) covers some cell, so a case added without its cell, or a cell whose case
was renamed away, fails here. Every exercise `discover()` finds is checked, so a new one joins
by writing its CONTRACT.md in the one format: per `## Level N` a table whose last column is
headed `case` and names case ids in backticks."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from lab.exercises import discover, get

ROOT = Path(__file__).resolve().parents[2] / "lab" / "exercises"
EXERCISES = {ex.id: ex.path.name for ex in discover()}
SEEDS = (1, 2)  # a fixed case has the same id and inputs at every seed
LEVEL = re.compile(r"^## Level (\d+)\b")
CELL_CASES = re.compile(r"`([^`]+)`")


def cells(exercise: str) -> dict[int, list[tuple[str, list[str]]]]:
    """Per level: (the row's text, the case ids its last column names)."""
    text = (ROOT / EXERCISES[exercise] / "CONTRACT.md").read_text(encoding="utf-8")
    out: dict[int, list[tuple[str, list[str]]]] = {}
    level = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = LEVEL.match(line)
        if m:
            level = int(m.group(1))
            out[level] = []
            continue
        if level is None or not line.startswith("|") or set(line) <= set("|-: "):
            continue
        columns = [c.strip() for c in line.strip().strip("|").split("|")]
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if following.startswith("|") and set(following) <= set("|-: "):
            assert columns[-1] == "case", f"{exercise} L{level}: last column not `case`: {line}"
            continue  # the header row
        out[level].append((line, CELL_CASES.findall(columns[-1])))
    return out


@functools.cache
def ids_at_every_seed(exercise: str, level: int) -> tuple[set[str], set[str]]:
    """(ids present at every seed, ids whose inputs are also the same at every seed: fixed)."""
    grading = get(exercise).grading()
    runs = [{c.id: c.params for c in grading.cases(level, seed)} for seed in SEEDS]
    common = set(runs[0]).intersection(*runs[1:])
    return common, {cid for cid in common if all(r[cid] == runs[0][cid] for r in runs[1:])}


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_level_has_its_table(exercise: str) -> None:
    levels = [lvl.number for lvl in get(exercise).levels]
    assert sorted(cells(exercise)) == levels


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_cell_names_fixed_cases_of_its_level(exercise: str) -> None:
    problems = []
    for level, rows in cells(exercise).items():
        ids, _ = ids_at_every_seed(exercise, level)  # a seeded gate case keeps its id
        for row, named in rows:
            real = [n for n in named if n != "empty_step"]
            if not real and "every" not in row:
                problems.append(f"L{level}: no case named: {row}")
            problems += [f"L{level}: {n!r} is not a case of level {level}: {row}"
                         for n in real if n not in ids]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_fixed_case_covers_a_cell(exercise: str) -> None:
    missing = []
    for level, rows in cells(exercise).items():
        named = {n for _, ns in rows for n in ns}
        fixed = ids_at_every_seed(exercise, level)[1]
        missing += [f"L{level}: {cid}" for cid in sorted(fixed - named)]
    assert not missing, "fixed cases with no cell in CONTRACT.md:\n" + "\n".join(missing)


# Exercises whose CONTRACT.md lists every comparison, ordering and event-in-one-step
# in a table outside the level sections, each row naming the fixed cases that sit on it.
COMPARISON_TABLES = {"sampling", "spec-verify", "tensor-parallel", "batch-engine", "paged-kv",
                     "meter", "fleet", "kv-bytes"}
COMPARISONS = "## Comparisons, orderings and events in one step"


def rows_outside_levels(exercise: str) -> list[tuple[str, list[str]]]:
    """Every row of a table whose last column is `case`, in a section that is not a level's."""
    text = (ROOT / EXERCISES[exercise] / "CONTRACT.md").read_text(encoding="utf-8")
    out: list[tuple[str, list[str]]] = []
    in_level, header = False, False
    for line in text.splitlines():
        if line.startswith("## "):
            in_level, header = bool(LEVEL.match(line)), False
            continue
        if in_level or not line.startswith("|"):
            header = header and line.startswith("|")
            continue
        columns = [c.strip() for c in line.strip().strip("|").split("|")]
        if set(line) <= set("|-: "):
            continue
        if columns[-1] == "case":
            header = True
            continue
        if header:
            out.append((line, CELL_CASES.findall(columns[-1])))
    return out


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_rows_outside_the_levels_name_cases_that_exist(exercise: str) -> None:
    """The comparisons table (and any other table with a `case` column outside the levels)
    names only fixed or seeded cases the exercise really has, at some level."""
    ids = set().union(*(ids_at_every_seed(exercise, lvl)[0] for lvl in cells(exercise)))
    rows = rows_outside_levels(exercise)
    problems = [f"{n!r} is not a case: {row}" for row, named in rows for n in named
                if n not in ids]
    problems += [f"no case named: {row}" for row, named in rows if not named]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("exercise", sorted(COMPARISON_TABLES))
def test_the_comparisons_table_is_there_and_each_level_has_rows(exercise: str) -> None:
    text = (ROOT / EXERCISES[exercise] / "CONTRACT.md").read_text(encoding="utf-8")
    assert COMPARISONS in text
    section = text.split(COMPARISONS, 1)[1].split("\n## ", 1)[0]
    levels = {int(line.strip("|").split("|")[0]) for line in section.splitlines()
              if line.startswith("|") and line.strip("|").split("|")[0].strip().isdigit()}
    assert levels == set(cells(exercise)), levels

