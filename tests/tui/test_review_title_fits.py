"""The review's title fits its two rows: a topic's title too long for them is cut with "…"
(at 60 columns "… continuous, and the batch-size dial" lost "dial" with no sign of it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.tui.conftest import ready, text_of
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen

LONG = ("Batching: static, dynamic (size-or-wait), continuous, and the batch-size dial, "
        "with its latency and throughput trade-offs")


@pytest.mark.slow
async def test_a_long_topic_title_is_cut_with_an_ellipsis_at_60_columns(
    make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainer.core.services import Services

    monkeypatch.setattr(Services, "topic_title", lambda self, topic_id: LONG)
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        await pilot.pause()
        title = app.screen.query_one("#review-title")
        shown = text_of(app, "#review-title")
        assert shown.rstrip().endswith("…"), shown
        assert "Batching: static" in shown
        for width in range(60, 72):  # cut at a word's end whatever the width ("di…" of "dial")
            await pilot.resize_terminal(width, 20)
            await pilot.pause()
            shown = text_of(app, "#review-title").rstrip()
            if shown.endswith("…"):
                kept = shown.removesuffix("…").split()[-1]
                assert kept in LONG.replace(",", "").split(), (width, shown)
        lines = title.render_lines(title.region.reset_offset)
        assert "…" in "".join(strip.text for strip in lines), lines
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:  # room for it: whole
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert text_of(app, "#review-title").rstrip().endswith(LONG)
