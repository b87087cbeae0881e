"""SVG snapshots of the main screens at 80x24, pinned to textual==8.2.8 (see pyproject).

Regenerate after an intended visual change with:
`python -m pytest tests/tui/test_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import textual

from tests.tui.conftest import ready, right_keys, wrong_keys
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen

assert textual.__version__ == "8.2.8", "snapshots are pinned to textual 8.2.8"

Snap = Callable[..., bool]


def _right_key(app: DojoApp) -> str:
    assert isinstance(app.screen, ReviewScreen)
    item = app.screen.session.current
    assert item is not None and item.instance.correct_index is not None
    return "abcd"[item.instance.correct_index]


@pytest.mark.slow
def test_home(snap_compare: Snap, make_app: Callable[..., DojoApp]) -> None:
    app = make_app()

    async def before(pilot: Any) -> None:
        await ready(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=before)


@pytest.mark.slow
def test_question(snap_compare: Snap, make_app: Callable[..., DojoApp]) -> None:
    app = make_app()

    async def before(pilot: Any) -> None:
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=before)


@pytest.mark.slow
def test_feedback(snap_compare: Snap, make_app: Callable[..., DojoApp]) -> None:
    app = make_app()

    async def before(pilot: Any) -> None:
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.press("b" if _right_key(app) == "a" else "a")  # a wrong answer
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=before)


@pytest.mark.slow
def test_stats(snap_compare: Snap, make_app: Callable[..., DojoApp]) -> None:
    app = make_app()

    async def before(pilot: Any) -> None:
        await ready(app, pilot)
        await pilot.press("enter")
        for grade, keys in (("5", right_keys), ("1", wrong_keys), ("4", right_keys)):
            assert isinstance(app.screen, ReviewScreen)
            item = app.screen.session.current
            assert item is not None
            await pilot.press(*keys(item), grade)
        await pilot.press("escape", "enter", "s")
        await app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=before)
