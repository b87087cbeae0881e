"""Fixtures for the TUI tests: a real SQLite store under the per-test DOJO_HOME and a small bank."""

from __future__ import annotations

import datetime as dt
import io
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from trainer.app import DojoApp
from trainer.core.services import Services
from trainer.core.session import Item
from trainer.screens.review import ReviewScreen

FIXTURES = Path(__file__).parent / "fixtures"
BANK = FIXTURES / "bank"
BROKEN = FIXTURES / "broken"


@pytest.fixture
def held_store(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The app's store (and bank) held from opening until the returned event is set (at most
    10 s): what a slow disk or a large bank does, so a test sees what the home shows before the
    store is open."""
    import trainer.app as app_module

    release = threading.Event()
    real = app_module._default_factory

    def held_factory():  # type: ignore[no-untyped-def]
        release.wait(10)
        return real()

    monkeypatch.setattr(app_module, "_default_factory", held_factory)
    return release


@pytest.fixture
def open_services(dojo_home: Path) -> Iterator[Callable[..., Services]]:
    """Open services on the fixture bank (plus extra paths); closes every store at the end."""
    opened: list[Services] = []

    def factory(*extra: Path) -> Services:
        services = Services.open(bank_paths=[BANK, *extra])
        services.rng.seed(1234)
        opened.append(services)
        return services

    yield factory
    for services in opened:
        services.close()


@pytest.fixture
def services(open_services: Callable[..., Services]) -> Services:
    return open_services()


# A fixed clock so dates, heatmaps and forecasts are the same on every run (and in snapshots).
NOW = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def make_app(open_services: Callable[..., Services]) -> Callable[..., DojoApp]:
    """The real app on the fixture bank, a temp SQLite store and the fixed clock."""

    def factory(*extra: Path, lab_command: list[str] | None = None) -> DojoApp:
        def services() -> Services:
            opened = open_services(*extra)
            opened.now = NOW
            return opened

        return DojoApp(services, lab_command=lab_command)

    return factory


async def ready(app: DojoApp, pilot: Pilot[None]) -> None:
    """Wait until the store and bank are open and the home screen has painted its data."""
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = getattr(app.screen, "view", None)
        if app.services is not None and view is not None:
            return
    raise AssertionError("the app never finished loading")


async def open_review(app: DojoApp, pilot: Pilot[None],
                      *keys: str) -> tuple[ReviewScreen, Item]:
    """Press `keys` (default Enter: today's session) and return the review screen they open
    and the card it shows."""
    await pilot.press(*(keys or ("enter",)))
    review = app.screen
    assert isinstance(review, ReviewScreen)
    item = review.session.current
    assert item is not None
    return review, item


def text_of(app: DojoApp, selector: str) -> str:
    """The plain text a Static shows (markup or a rich renderable such as Markdown)."""
    widget = app.screen.query_one(selector, Static)
    if isinstance(widget.content, str):
        return str(widget.render())
    console = Console(width=120, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def right_keys(item: Item) -> list[str]:
    """The keys that answer a card correctly (a letter, or the number and Enter)."""
    if item.is_mcq:
        assert item.instance.correct_index is not None
        return ["abcd"[item.instance.correct_index]]
    return [*f"{item.instance.answer:g}", "enter"]


def wrong_keys(item: Item) -> list[str]:
    """Keys for a wrong answer (another letter, or ten times the number)."""
    if item.is_mcq:
        assert item.instance.correct_index is not None
        return ["abcd"[(item.instance.correct_index + 1) % 4]]
    return [*f"{(item.instance.answer or 1) * 10:g}", "enter"]


class FlushedStore:
    """The app's store for assertions: every call first waits for answers still being written
    (the app writes them on a background thread so the next card paints at once)."""

    def __init__(self, app: DojoApp) -> None:
        self._app = app

    def __getattr__(self, name: str) -> Any:
        assert self._app.services is not None
        return getattr(self._app.services.store, name)


@pytest.fixture(scope="session")
def thirty_day_db(tmp_path_factory: pytest.TempPathFactory, _bank_cache: Path) -> Path:
    """A database holding thirty days of a learner's history (`tests.tui.history`), built once
    per session; tests copy it (`shutil.copyfile`) before opening it."""
    from scheduler.store import DB_NAME
    from tests.tui.history import thirty_days

    folder = tmp_path_factory.mktemp("thirty-days")
    with pytest.MonkeyPatch.context() as patch:  # the session's bank cache and a temp home
        patch.setenv("DOJO_CACHE", str(_bank_cache))
        patch.setenv("DOJO_HOME", str(folder))
        thirty_days(folder / DB_NAME).close()
    return folder / DB_NAME
