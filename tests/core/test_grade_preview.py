"""The grade bar shows what is saved: for random histories under each scheduler,
every grade's preview (`Feedback.previews`, from `Store.preview`) equals the schedule the store
saves when the card is graded so, through the real Session, Services and SQLite file. Each
grade is tried and undone in turn, so undo is checked too: after it the preview is the same."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tui.conftest import BANK
from trainer.core.services import Services
from trainer.core.session import Feedback, Item, Session

START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _answer(session: Session, item: Item, right: bool) -> Feedback:
    if item.is_mcq:
        assert item.instance.correct_index is not None
        return session.submit(item.instance.correct_index if right
                              else (item.instance.correct_index + 1) % len(item.instance.order))
    value = item.instance.answer or 1.0
    return session.submit(f"{value if right else value * 10:g}")


def _check_every_grade(services: Services, session: Session, right: bool, pick: int) -> None:
    """Grade the current card with each offered grade, compare the saved schedule with the
    preview, undo; then grade it with `pick` for good."""
    item = session.current
    assert item is not None
    fb = _answer(session, item, right)
    assert fb.previews is not None
    first = fb.previews
    assert first.scheduler == services.store.settings().scheduler
    for g in fb.grades:
        before = services.store.card(item.question_id)
        result = session.grade(g).result()
        saved = services.store.card(item.question_id)
        shown = first.grades[g]
        if shown.days is None:  # re-drill / cram: the schedule stays
            assert (saved.due, saved.interval) == (before.due, before.interval), (g, item.mode)
        else:
            assert saved.due == result.day + dt.timedelta(days=shown.days), (g, shown, saved)
            assert result.due == saved.due
        assert shown.again == result.needs_redrill
        assert session.undo() is item
        restored = services.store.card(item.question_id)
        assert (restored, restored.memory) == (before, before.memory)
        again = _answer(session, item, right)
        assert again.previews == first  # undo restored exactly what the preview read
    session.grade(fb.grades[pick % len(fb.grades)]).result()


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["sm2", "fsrs"])
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 23), st.booleans(),
                                st.integers(0, 2)), min_size=2, max_size=5))
def test_every_grade_saves_what_the_bar_showed(
    scheduler: str, steps: list[tuple[int, int, bool, int]], dojo_home: Path
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(db_path=Path(folder) / "dojo.sqlite3", bank_paths=[BANK],
                                 now=START)
        try:
            services.store.update_settings(timezone="UTC", scheduler=scheduler)
            now = START
            for gap, hour, right, pick in steps:
                now = now + dt.timedelta(days=gap, hours=hour)
                services.now = now
                session = services.start_session()
                for _ in range(3):  # a few cards a sitting, re-drills included
                    if session.current is None:
                        break
                    _check_every_grade(services, session, right, pick)
        finally:
            services.close()


def test_fsrs_bar_says_recall_not_ease(services: Services) -> None:
    """Under FSRS the note is the card's recall now, never SM-2's ease talk; under SM-2 a new
    card's tied 3/4/5 intervals show the ease moves."""
    from trainer.screens.review import grade_items

    services.now = START
    session = services.start_session()
    item = session.current
    assert item is not None
    _, note = grade_items(_answer(session, item, True))
    assert "ease moves 3 −0.14 · 4 ±0 · 5 +0.10" in note, note
    session.grade(4).result()
    services.store.update_settings(scheduler="fsrs")
    fb = session.submit(session.current.instance.correct_index  # type: ignore[union-attr]
                        if session.current.is_mcq  # type: ignore[union-attr]
                        else f"{session.current.instance.answer:g}")  # type: ignore[union-attr]
    items, note = grade_items(fb)
    assert "ease" not in note and "FSRS: a new card" in note, note
    assert fb.previews is not None and fb.previews.scheduler == "fsrs"
    # FSRS's own first intervals for a new card: Hard, Good and Easy differ (no SM-2 tie).
    days = {g: fb.previews.grades[g].days for g in (3, 4, 5)}
    assert len(set(days.values())) == 3, days
    assert any(f"4 good {days[4]}d" in i for i in items), items
