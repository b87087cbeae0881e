"""Where the learner's data lives: $DOJO_HOME if set, else the platform's user data directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DB_NAME = "dojo.sqlite3"  # the learner's database, in data_dir()


def data_dir() -> Path:
    """Return (and create, where it can) the data directory; tests and CI set DOJO_HOME to a
    temp dir."""
    override = os.environ.get("DOJO_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("serving-dojo", appauthor=False))
    with contextlib.suppress(OSError):  # a read-only parent: callers say what that means
        path.mkdir(parents=True, exist_ok=True)
    return path
