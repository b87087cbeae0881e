"""Which lab exercises (and levels) a question may link to.

The agreed ids are listed here, in one place, so questions can link to an exercise before its
folder lands; any `lab/exercises/*/exercise.toml` found on disk adds to (or refines) the table.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

# Agreed in docs/question-format.md and the lab protocol: exercise id -> number of levels.
AGREED_EXERCISES: dict[str, int] = {"kv-bytes": 2, "spec-verify": 5, "batch-engine": 4}

EXERCISES_DIR = Path(__file__).resolve().parents[1] / "lab" / "exercises"


def known_exercises(exercises_dir: Path = EXERCISES_DIR) -> dict[str, int]:
    """Exercise id -> highest level, from the agreed table plus the exercises on disk."""
    known = dict(AGREED_EXERCISES)
    if exercises_dir.is_dir():
        for manifest in sorted(exercises_dir.glob("*/exercise.toml")):
            try:
                data = tomllib.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # the lab's own checks report a broken manifest
            ex_id = data.get("id")
            levels = data.get("level")
            if not isinstance(ex_id, str):
                continue
            numbers = [
                lvl["number"]
                for lvl in levels or []
                if isinstance(lvl, dict) and isinstance(lvl.get("number"), int)
            ] if isinstance(levels, list) else []
            known[ex_id] = max([known.get(ex_id, 0), *numbers]) or 1
    return known
