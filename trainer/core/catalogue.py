"""Which labs and sims a question may link to, read from lab's own catalogue (never a copy).

lab/ owns which exercises (and how many levels) and which sims exist; the question bank only
links to them and never imports lab, so the trainer reads the catalogue here and hands it to
`questions` (`load_bank(..., **lab_links())`, `validate_files(..., **lab_links())`). Both
readers are cheap and torch-free: exercise discovery reads `exercise.toml` files only, and the
sims are pure Python.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


def known_exercises(exercises_dir: Path | None = None) -> dict[str, int]:
    """Exercise id -> highest level, for every readable manifest under `exercises_dir` (default:
    lab's own folder; a broken manifest is left out here, the lab's own checks report it)."""
    from lab.exercises import EXERCISES_DIR, ExerciseError, load_exercise

    folder = EXERCISES_DIR if exercises_dir is None else exercises_dir
    known: dict[str, int] = {}
    if not folder.is_dir():
        return known
    for child in sorted(folder.iterdir()):
        if not (child / "exercise.toml").is_file():
            continue
        try:
            exercise = load_exercise(child)
        except ExerciseError:
            continue
        known[exercise.id] = max(exercise.level_numbers)
    return known


@lru_cache(maxsize=1)
def known_sims() -> frozenset[str]:
    """The sims a question may name in `sim = "..."`."""
    from lab.sims import SIMS

    return frozenset(SIMS)


def lab_links() -> dict[str, Any]:
    """The `exercises` and `sims` keyword arguments that make the bank check its lab links."""
    return {"exercises": known_exercises(), "sims": known_sims()}
