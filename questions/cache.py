"""The validated bank, kept on disk between starts: validating 290 questions (parsing, draws,
checks) took ~0.6 s of every app start and every `dojo` command, for files that rarely change.

The cache is keyed by everything validation reads, so it is never stale: the content of every
bank file (built-in topics and packs), the validator's own code (questions/*.py), the lab
catalogue questions link to (lab/exercises/*/exercise.toml and its loader, lab/sims/*.py), the
number of draws, the built-in folder and the Python version. Any change gives a new key and the
bank is validated afresh. A cache that cannot be read or written (read-only, full disk,
corrupt, another version's pickle) is skipped silently: the bank then loads as without it.

Where: $DOJO_CACHE if set, else the platform's user cache dir (platformdirs), e.g.
~/.cache/serving-dojo on Linux. The file holds only what this user's own bank files produced.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from questions.validate import Report

KEEP = 4  # bank caches kept (different file sets: the app's bank, a pack being checked)
FORMAT = 1  # bump when what is pickled changes shape in a way the code hashes cannot see
_ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """$DOJO_CACHE, else the user cache dir; not created here."""
    override = os.environ.get("DOJO_CACHE")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("serving-dojo", appauthor=False))


def _code_files() -> list[Path]:
    """The code and catalogue validation depends on (see the module docstring)."""
    files = sorted((_ROOT / "questions").glob("*.py"))
    files += sorted((_ROOT / "lab" / "sims").glob("*.py"))
    files += sorted((_ROOT / "lab" / "exercises").glob("*/exercise.toml"))
    files.append(_ROOT / "lab" / "exercises" / "__init__.py")
    return files


def bank_key(files: Sequence[Path], draws: int, builtin_dir: Path | None,
             catalogue: str = "") -> str | None:
    """A digest of everything the validation of `files` reads (the lab catalogue its links are
    checked against included); None when a file cannot be read (validation then reports it,
    uncached)."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}|{sys.version}|{draws}|{builtin_dir}|{catalogue}".encode())
    try:
        for group, paths in (("bank", files), ("code", _code_files())):
            for path in paths:
                data = Path(path).read_bytes()
                digest.update(f"|{group}|{Path(path).resolve()}|{len(data)}|".encode())
                digest.update(data)
    except OSError:
        return None
    return digest.hexdigest()


def cached_report(
    files: Sequence[Path], draws: int, builtin_dir: Path | None, validate: Callable[[], Report],
    catalogue: str = "",
) -> Report:
    """The validation report of `files`: from the cache when its key matches, else
    `validate()`, then stored for the next start (best effort). `catalogue` names what else
    the validation depends on (the lab links' catalogue)."""
    key = bank_key(files, draws, builtin_dir, catalogue)
    if key is None:
        return validate()
    folder = cache_dir()
    path = folder / f"bank-{key[:32]}.pickle"
    try:
        with path.open("rb") as fh:
            stored = pickle.load(fh)
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
            return stored[1]  # type: ignore[no-any-return]
    except Exception:  # absent, unreadable, corrupt, another version's objects
        pass
    report = validate()
    _store(folder, path, key, report)
    return report


def _store(folder: Path, path: Path, key: str, report: Report) -> None:
    """Write atomically (a reader never sees half a file), then drop older bank caches."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bank-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((key, report), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        # Keep the few newest (the app's bank, a pack being checked...), drop the rest.
        older = sorted((p for p in folder.glob("bank-*.pickle") if p != path),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for old in older[KEEP - 1:]:
            old.unlink(missing_ok=True)
    except Exception:  # read-only or full: the next start validates again
        return
