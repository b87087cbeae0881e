"""The one way the trainer (app and `dojo` commands) opens the learner's database, and the one
history export both write.

SQLAlchemy is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.quick import QuickToday as QuickToday
    from scheduler.store import Store as Store


def open_store(
    path: Path | None = None,
    *,
    browse: bool = False,
    on_read_only: Callable[[str], None] | None = None,
) -> Store:
    """Open the learner's database (default data_dir()/dojo.sqlite3).

    A healthy database that cannot be written raises ReadOnlyDatabaseError, unless `browse`
    (a caller that only reads, or the app): then it is opened read-only and `on_read_only`
    gets the reason, for the caller to tell the learner in its own words."""
    from scheduler.errors import ReadOnlyDatabaseError
    from scheduler.store import Store

    try:
        return Store.open(path)
    except ReadOnlyDatabaseError as exc:
        if not browse:
            raise
        store = Store.open(path, read_only=True)
        if on_read_only is not None:
            on_read_only(str(exc))
        return store


def pinned_now() -> dt.datetime | None:
    """The moment $DOJO_NOW pins the clock to (None: real time); ClockError says why a value
    is refused."""
    from scheduler.days import pinned_now as pinned

    return pinned()


def data_dir() -> Path:
    """The learner's data folder ($DOJO_HOME, else the platform's)."""
    from scheduler.paths import data_dir as folder

    return folder()


def quick_counts() -> QuickToday | None:
    """The default database's counts for the app's first paint (plain sqlite3, no
    SQLAlchemy), or None (then the full view)."""
    from scheduler.paths import DB_NAME
    from scheduler.quick import quick_today

    try:
        now = pinned_now()
    except ValueError:
        return None  # the store's open says why
    return quick_today(data_dir() / DB_NAME, now)


def setting_names() -> list[str]:
    """The settings `dojo settings KEY=VALUE` takes, in their order."""
    from dataclasses import fields

    from scheduler.records import Settings

    return [f.name for f in fields(Settings)]


def history_text(data: dict[str, Any]) -> str:
    """An exported history as the JSON text `dojo import` reads back."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def export_history(store: Store, target: Path) -> dict[str, Any]:
    """Write the whole history (cards, answers, lab attempts) to `target` and return it.

    Written to `target.partial` first and renamed, so an interrupted export (disk full) never
    leaves a truncated file under the real name."""
    data = store.export_history()
    partial_file = target.with_name(target.name + ".partial")
    partial_file.write_text(history_text(data), encoding="utf-8")
    partial_file.replace(target)
    return data


def new_export_path(store: Store, now: dt.datetime | None = None) -> Path:
    """A fresh file under the database's `exports/` folder (created), stamped in UTC."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    folder = store.path.parent / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"history-{stamp}.json"
