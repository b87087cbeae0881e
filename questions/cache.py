"""The validated bank, kept on disk between starts: validating 290 questions (parsing, draws,
checks) took ~0.6 s of every app start and every `dojo` command, for files that rarely change.

The cache is keyed by a stamp of everything validation reads, taken without reading it: the
path, modification and change time (ns), size and inode of every bank file (built-in topics and
packs), of the validator's own code (questions/*.py) and of the lab catalogue questions link to
(lab/exercises/*/exercise.toml and its loader, lab/sims/*.py); the app's version, the number of
draws, the built-in folder and the Python version. A write to any of these files, a file added
or removed, or a new version gives a new key and the bank is validated afresh. A cache that
cannot be read or written (read-only, full disk, corrupt, truncated, another version's pickle)
is skipped silently: the bank then loads as without it, and the next write replaces it.

Two kinds of entry: the validation report (a pickle per key, for whoever needs the questions)
and small JSON entries under a fixed name holding their key (`dojo due`'s study index: question
ids and topics in study order, read without importing the validator).

Where: $DOJO_CACHE if set, else the platform's user cache dir (platformdirs), e.g.
~/.cache/serving-dojo on Linux. The files hold only what this user's own bank files produced.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from questions.validate import Report

KEEP = 4  # bank caches kept (different file sets: the app's bank, a pack being checked)
FORMAT = 2  # bump when what is pickled changes shape in a way the code stamps cannot see
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


def stamp(digest: Any, paths: Sequence[Path]) -> None:
    """Feed each file's path, mtime, ctime, size and inode to `digest` (OSError if one is
    missing: the caller then validates uncached, and validation names the file)."""
    for path in paths:
        st = os.stat(path)
        digest.update(f"|{os.path.abspath(path)}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_size}"
                      f"|{st.st_ino}".encode())


def bank_key(files: Sequence[Path], draws: int, builtin_dir: Path | None,
             catalogue: str = "", version: str = "") -> str | None:
    """A digest standing for everything the validation of `files` reads (the lab catalogue its
    links are checked against and the app's `version` included); None when a file cannot be
    stat'ed (validation then reports it, uncached)."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}|{sys.version}|{version}|{draws}|{builtin_dir}|{catalogue}".encode())
    try:
        digest.update(b"|bank")
        stamp(digest, files)
        digest.update(b"|code")
        stamp(digest, _code_files())
    except OSError:
        return None
    return digest.hexdigest()


def cached_report(
    files: Sequence[Path], draws: int, builtin_dir: Path | None, validate: Callable[[], Report],
    catalogue: str = "", version: str = "",
) -> Report:
    """The validation report of `files`: from the cache when its key matches, else
    `validate()`, then stored for the next start (best effort). `catalogue` names what else
    the validation depends on (the lab links' catalogue), `version` the app's version."""
    key = bank_key(files, draws, builtin_dir, catalogue, version)
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


def read_entry(name: str, key: str) -> Any:
    """The JSON value stored under `name` with this `key`, or None (absent, another key,
    unreadable, corrupt or truncated)."""
    try:
        with (cache_dir() / name).open("rb") as fh:
            stored = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(stored, dict) and stored.get("key") == key:
        return stored.get("value")
    return None


def write_entry(name: str, key: str, value: Any) -> None:
    """Store a JSON `value` under `name` with its `key`, atomically (best effort)."""
    folder = cache_dir()
    _write_atomic(folder, folder / name, json.dumps({"key": key, "value": value}).encode())


def _write_atomic(folder: Path, path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temporary file and a rename (a reader never sees half a
    file); False when the folder is read-only or full (the next start rebuilds)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def _store(folder: Path, path: Path, key: str, report: Report) -> None:
    """Write the report atomically, then drop older bank caches."""
    try:
        data = pickle.dumps((key, report), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an object that does not pickle: the next start validates again
        return
    if not _write_atomic(folder, path, data):
        return
    try:  # keep the few newest (the app's bank, a pack being checked...), drop the rest
        older = sorted((p for p in folder.glob("bank-*.pickle") if p != path),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for old in older[KEEP - 1:]:
            old.unlink(missing_ok=True)
    except OSError:
        return
