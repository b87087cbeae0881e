"""The first screen paints before anything heavy is imported (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import trainer.cli
from trainer.app import DojoApp
from trainer.screens.today import TodayScreen
print(json.dumps(sorted(m for m in ("torch", "transformers", "sqlalchemy", "questions.bank",
                                    "scheduler.store") if m in sys.modules)))
"""


@pytest.mark.slow
def test_the_app_and_home_screen_import_nothing_heavy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    ).stdout
    assert json.loads(out.splitlines()[-1]) == []


QUICK_PROBE = """
import json, sys
from scheduler.quick import quick_today
print(json.dumps(sorted(m for m in ("sqlalchemy", "scheduler.store") if m in sys.modules)))
"""


@pytest.mark.slow
def test_todays_counts_are_read_without_sqlalchemy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", QUICK_PROBE], cwd=ROOT, capture_output=True, text=True,
        check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    ).stdout
    assert json.loads(out.splitlines()[-1]) == []


@pytest.mark.slow
async def test_home_shows_todays_counts_before_the_store_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_store: threading.Event
) -> None:
    """While the store and bank still load, Home already shows the day's counts."""
    from scheduler.store import Store
    from tests.scheduler.conftest import at, grade
    from trainer.app import DojoApp
    from trainer.screens.today import TodayScreen

    monkeypatch.setenv("DOJO_HOME", str(tmp_path))
    monkeypatch.setenv("DOJO_NOW", at(2).replace(tzinfo=None).isoformat())
    with Store.open(tmp_path / "dojo.sqlite3") as store:
        store.update_settings(timezone="UTC", new_limit=3)
        store.sync_cards([(f"q-{i}", "t") for i in range(8)], retire_missing=True)
        grade(store, "q-0", 4, at(1))
        grade(store, "q-1", 1, at(1))
        queue = store.today_queue(at(2))
    assert (len(queue.reviews), len(queue.new)) == (2, 3)  # what a session would serve
    release = held_store
    app = DojoApp()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if isinstance(app.screen, TodayScreen) and app.screen.quick is not None:
                break
            await pilot.pause(0.02)
        assert app.services is None  # the store has not opened yet
        counts = str(app.screen.query_one("#today-counts").render())
        assert "Due 2" in counts and "New 3" in counts and "Streak 1" in counts, counts
        release.set()


@pytest.mark.slow
async def test_the_whole_home_shows_before_the_store_opens_and_enter_waits_for_it(
    monkeypatch: pytest.MonkeyPatch, held_store: threading.Event
) -> None:
    """On the real bank with a history: charts and plan are on Home while the store and bank
    still load, the same as the store's view; Enter pressed then opens the session as soon as
    the store is open."""
    import datetime as dt

    from tests.tui.conftest import text_of
    from trainer.app import DojoApp
    from trainer.core.services import Services
    from trainer.screens.review import ReviewScreen
    from trainer.screens.today import TodayScreen
    from trainer.widgets.charts import BarChart, Heatmap

    start = dt.datetime(2026, 9, 1, 9, tzinfo=dt.UTC)
    services = Services.open(now=start)  # the real bank: cards synced, the study index kept
    services.store.update_settings(timezone="UTC", new_limit=5)
    for day in range(3):
        now = start + dt.timedelta(days=day)
        queue = services.store.today_queue(now)
        for item in [*queue.reviews, *queue.new]:
            services.store.answer(item.question_id, 4, correct=True, answer_text="x",
                                  response_ms=5000, now=now)
    services.close()  # no backup made yet today: this start is the day's first
    monkeypatch.setenv("DOJO_NOW", (start + dt.timedelta(days=3)).replace(tzinfo=None)
                       .isoformat())
    release = held_store
    app = DojoApp()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, TodayScreen) and not app.screen.plan_pending:
                break
            await pilot.pause(0.02)
        await pilot.pause()  # painted
        screen = app.screen
        assert isinstance(screen, TodayScreen) and screen.view is not None
        assert app.services is None  # the store has not opened yet
        quick = screen.view
        assert (quick.new, quick.streak, sum(quick.per_day.values())) == (5, 3, 25)
        assert screen.query_one(Heatmap).per_day == quick.per_day
        assert screen.query_one(BarChart).values == quick.forecast[:14]
        assert "weakest first" in text_of(app, "#today-plan")
        assert "stale" not in screen.query_one("#today-counts").classes
        await pilot.press("enter")  # before the store opens: the session waits for it
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)
        release.set()
        for _ in range(200):
            if isinstance(app.screen, ReviewScreen):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, ReviewScreen)
        assert app.services is not None
        assert app.services.today() == quick  # what Home showed is the store's view
