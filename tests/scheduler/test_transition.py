"""The pure study transition: due date, lapses, leech and re-drill, without a database."""

from __future__ import annotations

import datetime as dt

import pytest

from scheduler.records import Scheduled, Settings
from scheduler.sm2 import CardState
from scheduler.transition import REDRILL_UNTIL, apply, needs_redrill

DAY = dt.date(2026, 5, 10)
NEW = Scheduled(CardState.new(), None, 0, False)


def test_a_new_card_reviewed_is_due_after_its_first_interval() -> None:
    after, redrill = apply(NEW, 4, "review", DAY, Settings())
    assert after == Scheduled(CardState(250, 1, 1), DAY + dt.timedelta(days=1), 0, False)
    assert not redrill


@pytest.mark.parametrize("quality,lapses,redrill", [(0, 1, True), (2, 1, True), (3, 0, True),
                                                    (4, 0, False), (5, 0, False)])
def test_lapses_count_fails_and_redrill_runs_below_four(quality: int, lapses: int,
                                                         redrill: bool) -> None:
    card = Scheduled(CardState(250, 3, 15), DAY, 0, False)
    after, again = apply(card, quality, "review", DAY, Settings())
    assert after.lapses == lapses and again is redrill
    assert needs_redrill(quality) is redrill and REDRILL_UNTIL == 4


@pytest.mark.parametrize("lapses_before,quality,leech", [
    (1, 1, False),   # 2 lapses < 3
    (2, 1, True),    # the third lapse reaches leech_lapses = 3
    (2, 3, False),   # a pass never makes a leech
    (5, 5, True),    # already a leech stays one (set below)
])
def test_leech_at_exactly_the_configured_lapses(lapses_before: int, quality: int,
                                                leech: bool) -> None:
    card = Scheduled(CardState(250, 0, 1), DAY, lapses_before, lapses_before >= 3)
    after, _ = apply(card, quality, "review", DAY, Settings(leech_lapses=3))
    assert after.leech is leech


@pytest.mark.parametrize("mode", ["redrill", "cram"])
def test_practice_modes_leave_the_card_alone(mode: str) -> None:
    card = Scheduled(CardState(250, 2, 6), DAY + dt.timedelta(days=3), 1, False)
    after, redrill = apply(card, 0, mode, DAY, Settings())  # type: ignore[arg-type]
    assert after == card and redrill


def test_a_review_before_the_due_day_is_refused_on_the_due_day_allowed() -> None:
    card = Scheduled(CardState(250, 1, 1), DAY + dt.timedelta(days=1), 0, False)
    with pytest.raises(ValueError, match="not due until 2026-05-11"):
        apply(card, 4, "review", DAY, Settings())
    after, _ = apply(card, 4, "review", DAY + dt.timedelta(days=1), Settings())
    assert after.due == DAY + dt.timedelta(days=7)
    overdue, _ = apply(card, 4, "review", DAY + dt.timedelta(days=30), Settings())
    assert overdue.due == DAY + dt.timedelta(days=36)  # from the day answered, not the due day


@pytest.mark.parametrize("quality,mode", [(6, "review"), (-1, "cram"), (True, "review"),
                                          (3, "new"), (3, "")])
def test_bad_grade_or_mode_is_refused(quality: int, mode: str) -> None:
    with pytest.raises(ValueError, match=r"quality|mode"):
        apply(NEW, quality, mode, DAY, Settings())  # type: ignore[arg-type]
