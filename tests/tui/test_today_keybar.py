"""Today's key bar (eleven keys): at 80x24 and 100x40 every key shows, on a second row where
one line is too narrow, with F1 and ^p kept; at 60x20, where they cannot all show, F1 lists
every one of them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rich.text import Text

from tests.tui.conftest import ready, text_of
from tests.tui.test_sizes import SIZES, _keybar_keeps_help
from trainer.app import DojoApp
from trainer.screens.help import HelpScreen
from trainer.screens.today import TodayScreen
from trainer.widgets.keybar import KeyBar, fit

LABELS = [b.description for b in TodayScreen.BINDINGS if b.show and b.id != "rebuild"]


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_today_key_is_reachable(make_app: Callable[..., DojoApp],
                                            size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        assert isinstance(app.screen, TodayScreen)
        _keybar_keeps_help(app)
        bar = str(app.screen.query_one(KeyBar).render())
        if size != (60, 20):
            missing = [label for label in LABELS if label not in bar]
            assert not missing and "…" not in bar, bar
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        body = text_of(app, "#help-body")
        keys = body[:body.index("Everywhere")]
        assert [label for label in LABELS if label not in keys] == []


def test_a_second_row_takes_what_the_first_cannot_hold() -> None:
    parts = [f"[b]{k}[/] {k}word" for k in "abcdef"]  # 7 cells each
    help_ = ["[b]F1[/] Help"]
    one = Text.from_markup(fit(parts, help_, 40)).plain
    assert "\n" not in one and one.endswith("…F1 Help") and "fword" not in one
    two = Text.from_markup(fit(parts, help_, 40, rows=2)).plain
    lines = two.split("\n")
    assert len(lines) == 2 and all(len(line) <= 40 for line in lines), lines
    assert "…" not in two and "fword" in two and lines[1].endswith("F1 Help")
    assert "\n" not in fit(parts[:2], help_, 40, rows=2)  # one line where one is enough
