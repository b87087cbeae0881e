"""Which labs a question may link to, read from lab's own catalogue rather than a copy of it.

lab/ owns which exercises (and how many levels) and which sims exist; a question only links to
them, so the validator asks lab instead of keeping a list that goes stale when a lab lands. Both
readers are cheap and torch-free: exercise discovery reads `exercise.toml` files only
(`lab.exercises.load_exercise`), and the sims are pure Python (`lab.sims.SIMS`). lab never imports
questions, so the dependency runs one way. Callers that want a different catalogue (tests, a
tool) pass `exercises` / `sims` to `validate_files`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

EXERCISES_DIR = Path(__file__).resolve().parents[1] / "lab" / "exercises"


def known_exercises(exercises_dir: Path = EXERCISES_DIR) -> dict[str, int]:
    """Exercise id -> highest level, for every readable manifest under `exercises_dir` (a
    broken one is left out here; the lab's own checks report it)."""
    from lab.exercises import ExerciseError, load_exercise

    known: dict[str, int] = {}
    if not exercises_dir.is_dir():
        return known
    for folder in sorted(exercises_dir.iterdir()):
        if not (folder / "exercise.toml").is_file():
            continue
        try:
            exercise = load_exercise(folder)
        except ExerciseError:
            continue
        known[exercise.id] = max(exercise.level_numbers)
    return known


@lru_cache(maxsize=1)
def known_sims() -> frozenset[str]:
    """The sims a question may name in `sim = "..."`."""
    from lab.sims import SIMS

    return frozenset(SIMS)
