"""Every screen at 60x20, 80x24 and 100x30: panels keep their borders inside the
terminal, the key bar always shows F1 and ^p, the question stays visible above the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from textual.widget import Widget

from tests.tui.conftest import open_review, ready, right_keys
from trainer.app import DojoApp
from trainer.widgets.keybar import KeyBar

AppFactory = Callable[..., DojoApp]
SIZES = [(60, 20), (80, 24), (100, 30)]


def _inside(app: DojoApp, selector: str) -> None:
    width = app.size.width
    for widget in app.screen.query(selector):
        assert isinstance(widget, Widget)
        right = widget.virtual_region_with_margin.right
        assert right <= width, f"{selector} {widget.id or ''} ends at column {right} > {width}"


def _keybar_keeps_help(app: DojoApp) -> None:
    bar = app.screen.query_one(KeyBar)
    text = str(bar.render())
    assert "Help" in text and "palette" in text.splitlines()[-1], text
    assert all(len(line) <= app.size.width for line in text.splitlines()), text


async def _settle(app: DojoApp, pilot: object) -> None:
    for _ in range(4):
        await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_screen_fits(make_app: AppFactory, size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        _inside(app, ".panel")  # Today: heatmap and the 14-day forecast, borders included
        _keybar_keeps_help(app)
        for key in ("s", "b", "m", "l"):  # Stats, Browse, Sims, Lab
            await pilot.press(key)
            await _settle(app, pilot)
            _inside(app, ".panel")
            _inside(app, "#sim-out, #lab-right, #browse-table")
            _keybar_keeps_help(app)
            await pilot.press("escape")
            await _settle(app, pilot)
        review, item = await open_review(app, pilot)  # a review: answer the MCQ
        long = "\n\n".join(f"Step {i}: a long worked explanation line." for i in range(30))
        item.instance = replace(item.instance, explanation=long)  # taller than the terminal
        await pilot.press(*right_keys(item))
        await _settle(app, pilot)
        _keybar_keeps_help(app)
        bar = review.query_one("#gradebar")
        assert "Enter = 4" in str(bar.render())
        text = str(bar.render())
        assert bar.size.height * bar.size.width >= len(text), "the grade bar is cut"
        body = review.query_one("#review-body")
        top, height = body.scroll_offset.y, body.size.height
        verdict = review.query_one("#verdict").virtual_region
        assert top <= verdict.y < top + height  # the verdict is in view
        if size != (60, 20):  # and the question above it, where both fit
            prompt = review.query_one("#prompt").virtual_region
            assert prompt.bottom > top, "the question scrolled away"
