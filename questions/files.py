"""Where the bank's question files are: the built-in topics and the learner's imported packs.

Listing them imports nothing else of `questions`, so `dojo due` can stamp them (the study index's
cache key) without loading the validator.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

BUILTIN_DIR = Path(__file__).resolve().parent / "topics"


def packs_dir() -> Path:
    """Where `dojo questions import` keeps the learner's packs (under the data dir)."""
    from scheduler.paths import data_dir

    return data_dir() / "packs"


def builtin_files() -> list[Path]:
    return sorted(BUILTIN_DIR.glob("*.toml")) if BUILTIN_DIR.is_dir() else []


def pack_files() -> list[Path]:
    folder = packs_dir()
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def expand(paths: Iterable[Path | str]) -> list[Path]:
    """Files as given, folders as their *.toml files (sorted)."""
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        files.extend(sorted(path.glob("*.toml")) if path.is_dir() else [path])
    return files
