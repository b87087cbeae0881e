"""The plan to the interview day in the app: set from Today (`p`) or the palette,
shown on Today and Stats with each topic's predicted recall, weakest first, and its labs, readable
at 60x20, 80x24 and 100x30."""

from __future__ import annotations

import datetime as dt
import re
import textwrap
from collections.abc import Callable

import pytest
from textual.widgets import Input, Static

from tests.tui.conftest import NOW, FlushedStore, ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.core.services import Services
from trainer.screens.plan import PlanScreen, parse_plan
from trainer.screens.review import ReviewScreen
from trainer.screens.stats import StatsScreen

INTERVIEW = NOW.date() + dt.timedelta(days=21)


def test_the_plan_input_reads_a_date_and_minutes() -> None:
    assert parse_plan("2026-12-21 45") == (dt.date(2026, 12, 21), 45)
    assert parse_plan(" 2026-12-21 ") == (dt.date(2026, 12, 21), 30)
    assert parse_plan("clear") is None
    for bad in ("21/12/2026", "2026-12-21 0", "2026-12-21 lots", ""):
        with pytest.raises(ValueError):
            parse_plan(bad)
    with pytest.raises(ValueError, match=r"'2026-13-01': month must be 1-12, not 13"):
        parse_plan("2026-13-01 45")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(60, 20), (80, 24), (100, 30)])
async def test_the_plan_screen_names_the_bad_part_of_a_date(
    make_app: Callable[..., DojoApp], size: tuple[int, int],
) -> None:
    """Month 13 or 30 February is refused naming that part, readable at each size, and the
    screen stays open with nothing stored."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await pilot.press("p")
        assert isinstance(app.screen, PlanScreen)
        for typed, says in (("2026-13-01 45", "month must be 1-12, not 13"),
                            ("2027-02-30", "day must be 1-28 in February 2027, not 30")):
            app.screen.query_one(Input).value = typed
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, PlanScreen)
            error = app.screen.query_one("#plan-error", Static)
            shown = " ".join(text_of(app, "#plan-error").split())
            assert says in shown, shown
            # wrapped to the widget's width, every line of it is on screen
            wrapped = textwrap.wrap(shown, error.region.width)
            assert error.region.height >= len(wrapped) and error.region.bottom <= size[1]
        assert FlushedStore(app).plan() is None


def _fits(app: DojoApp, selector: str) -> list[str]:
    """The widget's lines; each fits its width and the widget starts on screen."""
    widget = app.screen.query_one(selector, Static)
    lines = text_of(app, selector).rstrip("\n").splitlines()
    assert widget.region.width > 0 and widget.region.y < app.screen.size.height
    for line in lines:
        assert len(line) <= widget.region.width, (line, widget.region.width)
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("size", [(60, 20), (80, 24), (100, 30)])
async def test_plan_is_set_on_today_and_shown_with_readiness(
    make_app: Callable[..., DojoApp], size: tuple[int, int],
) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        assert "No interview date set" in text_of(app, "#today-plan")
        # Answer the first card right, so one topic has a recall above 0.
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None
        await pilot.press(*right_keys(item), "5", "escape", "enter")  # the summary, home
        await pilot.press("p")
        assert isinstance(app.screen, PlanScreen)
        app.screen.query_one(Input).value = f"{INTERVIEW} 20"
        await pilot.press("enter")
        for _ in range(4):
            await app.workers.wait_for_complete()
            await pilot.pause()
        plan = FlushedStore(app).plan()
        assert (plan.interview, plan.minutes) == (INTERVIEW, 20)
        lines = _fits(app, "#today-plan")
        assert lines[0].startswith(f"Interview {INTERVIEW}") and "21 days left" in lines[0]
        assert "20 min/day" in lines[0]
        assert any(x.endswith("weakest first (labs = levels passed):") for x in lines), lines
        topics = [x for x in lines if " cards begun · labs " in x]
        assert len(topics) == 2  # the fixture bank's two topics, weakest first
        assert "KV-cache" in topics[0] and "0%" in topics[0]
        assert topics[0].endswith(" 0/2 cards begun · labs 0/1"), topics[0]
        assert "Continuous" in topics[1] and topics[1].endswith(" 1/1 cards begun · labs 0/1")
        await pilot.press("s")
        assert isinstance(app.screen, StatsScreen)
        for _ in range(4):
            await app.workers.wait_for_complete()
            await pilot.pause()
        shown = _fits(app, "#stats-readiness")
        assert shown[0].startswith(f"Interview {INTERVIEW}")
        # the same topics, shares and counts (a title may be cut at another width)
        same = re.compile(r"(\d+%) (\w+).* (\d+/\d+ cards begun · labs \d+/\d+)$")
        assert [same.search(x).groups() for x in shown  # type: ignore[union-attr]
                if " cards begun · labs " in x] == [
            same.search(x).groups() for x in topics]  # type: ignore[union-attr]


@pytest.mark.slow
async def test_the_palette_sets_the_plan(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Plan to the interview")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        app.screen.query_one(Input).value = "2020-01-01"
        await pilot.press("enter")
        await pilot.pause()
        assert FlushedStore(app).plan() is None  # a past date is refused
        assert not isinstance(app.screen, PlanScreen)


@pytest.mark.slow
async def test_home_paints_before_the_plan_replay_and_fills_it_in(
    make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan's FSRS replay (most of Today's work on a long history) does not hold back the
    counts and charts: they paint first, the plan follows."""
    import threading

    from trainer.core import views

    release = threading.Event()
    real = views.plan_report_or_none

    def slow_plan(services):  # type: ignore[no-untyped-def]
        release.wait(10)
        return real(services)

    monkeypatch.setattr(views, "plan_report_or_none", slow_plan)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            if getattr(app.screen, "view", None) is not None:
                break
            await pilot.pause(0.02)
        screen = app.screen
        assert screen.view is not None and screen.plan_pending  # type: ignore[attr-defined]
        assert "Due" in text_of(app, "#today-counts")
        assert not app.screen.query_one("#today-plan").display
        release.set()
        await ready(app, pilot)
        assert not screen.plan_pending  # type: ignore[attr-defined]
        assert "No interview date set" in text_of(app, "#today-plan")


def test_without_a_plan_topics_rank_by_recall_seven_days_ahead(services: Services) -> None:
    """A topic failed a minute ago reads 100% "now" (FSRS counts whole days); 7 days ahead
    it is the weakest, and the report says which day it predicts for."""
    from trainer.core.plan import plan_lines, plan_report

    now = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.UTC)
    store = services.store
    store.update_settings(timezone="UTC")
    for qid, q in (("batching-001", 1), ("kv-cache-001", 5), ("kv-cache-002", 5)):
        store.answer(qid, q, correct=q >= 3, answer_text="x", response_ms=1000, now=now)
    report = plan_report(store, services.bank, now)
    assert report.at == dt.datetime(2026, 11, 9, 4, 0, tzinfo=dt.UTC)
    assert [t.topic for t in report.topics] == ["batching", "kv-cache"]
    assert report.topics[0].recall_on_day < report.topics[1].recall_on_day < 1
    assert "Recall in 7 days (2026-11-09), weakest first" in "\n".join(plan_lines(report))
