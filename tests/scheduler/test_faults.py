"""Faults a daily user meets: a pinned clock, a full disk, a read-only
folder, unreadable settings, a card answered in another window, a mid-day timezone change.
Each against a real SQLite file; each asserts what the learner is told and that nothing is lost."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.exc import OperationalError

from scheduler.backup import backup_dir
from scheduler.errors import AnsweredElsewhereError, DiskFullError, ReadOnlyDatabaseError
from scheduler.paths import data_dir
from scheduler.store import Store
from tests.scheduler.conftest import at, grade
from tests.scheduler.test_cli import no_bank  # noqa: F401  (fixture)
from trainer.cli import main

UTC = dt.UTC
pytestmark = pytest.mark.usefixtures("no_bank")  # the CLI commands see no question bank


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _home_db() -> Path:
    path = data_dir() / "dojo.sqlite3"
    with Store.open(path) as store:
        store.update_settings(timezone="UTC")
        store.sync_cards([("a", "t"), ("b", "t")])
    return path


# -- 14: DOJO_NOW ------------------------------------------------------------------------------

def test_dojo_now_pins_the_study_day_of_every_command(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    _home_db()
    monkeypatch.setenv("DOJO_NOW", "2026-12-02T09:00:00+00:00")
    code, out = run("due", "--json")
    assert code == 0, out
    assert json.loads(out[out.index("{"):])["day"] == "2026-12-02"


@pytest.mark.parametrize("value", ["9999-12-31", "tomorrow"])
def test_a_far_future_or_garbled_dojo_now_is_refused_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("DOJO_NOW", value)
    code, out = run("due")
    assert code == 1
    assert "DOJO_NOW" in out and "Traceback" not in out


# -- 15: disk full -----------------------------------------------------------------------------

def test_a_failed_daily_backup_warns_but_opens_and_exports() -> None:
    path = _home_db()
    backup_dir(path).rmdir() if backup_dir(path).is_dir() else None
    backup_dir(path).write_text("not a folder")  # the backup cannot be written
    code, out = run("export")
    assert code == 0, out
    assert "today's backup could not be made" in out
    assert json.loads(out[out.index("{"):])["cards"]
    assert not list(path.parent.glob("**/*.partial"))


def test_an_answer_on_a_full_disk_says_so_and_changes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.sync_cards([("a", "t")])

    def full() -> None:
        raise OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full"))

    monkeypatch.setattr(store, "_inside_answer_transaction", full)
    with pytest.raises(DiskFullError, match="disk full"):
        grade(store, "a", 4, at(1))
    assert store.history("a") == [] and store.card("a").due is None


# -- 16: read-only folder ------------------------------------------------------------------------

def _deny_writes(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    real = os.access

    def access(path: object, mode: int, **kw: object) -> bool:
        if mode & os.W_OK and Path(str(path)).resolve().is_relative_to(folder.resolve()):
            return False
        return real(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)


def test_a_read_only_folder_is_called_read_only_and_can_be_browsed(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _home_db()
    _deny_writes(monkeypatch, path.parent)
    with pytest.raises(ReadOnlyDatabaseError) as caught:
        Store.open(path)
    assert "read-only" in str(caught.value) and "start afresh" not in str(caught.value)
    code, out = run("due")
    assert code == 0, out
    assert "read-only" in out and "0 reviews, 2 new" in out
    code, out = run("settings", "new_limit=3")
    assert code == 1 and "read-only" in out and "damaged" not in out


# -- 17: unreadable settings -------------------------------------------------------------------

def test_bad_settings_fall_back_to_defaults_naming_every_bad_key() -> None:
    path = _home_db()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR REPLACE INTO settings(key, value) VALUES ('new_limit', '{bad')")
        conn.execute(
            "INSERT OR REPLACE INTO settings(key, value) VALUES ('timezone', '\"Mars/Base\"')")
    for command in ("due", "stats"):
        code, out = run(command)
        assert code == 0, out
        assert "new_limit" in out and "timezone" in out and "defaults" in out
    with Store.open(path) as store:
        assert store.settings().new_limit == 10
        with pytest.raises(ValueError) as caught:
            store.update_settings(new_limit=-1, rollover_hour=30, timezone="Nowhere/X")
    assert all(k in str(caught.value) for k in ("new_limit", "rollover_hour", "timezone"))


# -- 19: two windows -----------------------------------------------------------------------------

def test_a_card_answered_in_another_window_is_named_as_such(store: Store, db_path: Path) -> None:
    store.sync_cards([("a", "t")])
    with Store.open(db_path) as other:
        grade(other, "a", 4, at(1))
    with pytest.raises(AnsweredElsewhereError, match="already answered today"):
        grade(store, "a", 4, at(1, 13))
    assert len(store.history("a")) == 1


# -- 20: timezone change mid-day ---------------------------------------------------------------

def test_a_mid_day_timezone_change_keeps_todays_answers_and_allowance(store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t"), ("c", "t")])
    store.update_settings(new_limit=2)
    day = at(1, 15).date()
    grade(store, "a", 4, dt.datetime(2026, 3, 1, 15, 50, tzinfo=UTC))
    before = store.streak(dt.datetime(2026, 3, 1, 16, tzinfo=UTC))
    store.update_settings(timezone="Pacific/Kiritimati",
                          now=dt.datetime(2026, 3, 1, 16, tzinfo=UTC))  # UTC+14
    later = dt.datetime(2026, 3, 1, 16, 5, tzinfo=UTC)
    assert store.study_day(later) == day
    queue = store.today_queue(later)
    assert [i.question_id for i in queue.items] == ["b"]  # a stays answered, 1 new left
    assert store.streak(later) == before == 1
    # The next day begins when both rules agree: 04:00 UTC under the old rule.
    assert store.study_day(dt.datetime(2026, 3, 2, 3, 59, tzinfo=UTC)) == day
    next_day = dt.datetime(2026, 3, 2, 4, 0, tzinfo=UTC)
    assert store.study_day(next_day) == day + dt.timedelta(days=1)
    assert [i.question_id for i in store.today_queue(next_day).items] == ["a", "b", "c"]


def test_a_mid_day_timezone_change_is_explained_by_dojo_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _home_db()
    monkeypatch.setenv("DOJO_NOW", "2026-03-01T16:00:00+00:00")
    code, out = run("settings", "timezone=Pacific/Kiritimati")
    assert code == 0, out
    assert "timezone           Pacific/Kiritimati" in out
    assert "keeps the previous time zone/rollover until 2026-03-02 04:00 UTC" in out
