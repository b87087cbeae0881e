"""The mock round's own clock and dates: a round is dated on the study day it is
played ($DOJO_NOW, like answers); one left open for days says so when it resumes, and its clock
and its parts' times leave out the time it sat closed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.store import Store
from trainer.core import mock as core
from trainer.core.services import Services

FIXTURE_BANK = Path(__file__).resolve().parents[1] / "tui" / "fixtures" / "bank"
DAY2 = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
DAY21 = DAY2 + dt.timedelta(days=19)
T0 = 1_000_000.0  # the wall clock the fake clock starts at


class Wall:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.s = T0

    def __call__(self) -> float:
        return self.s


@pytest.fixture
def opened() -> Iterator[list[Services]]:
    services: list[Services] = []
    yield services
    for s in services:
        s.close()


def _services(opened: list[Services], now: dt.datetime) -> Services:
    services = Services.open(bank_paths=[FIXTURE_BANK], now=now)
    opened.append(services)
    return services


def test_a_round_peeked_on_day_2_and_resumed_on_day_21(opened: list[Services]) -> None:
    wall = Wall()
    day2 = _services(opened, DAY2)
    day2.store.update_settings(timezone="UTC")
    mock = core.new_round(day2, 45, clock=wall)
    core.begin(mock, day2, clock=wall)  # peeked: the first part's clock starts
    wall.s += 137  # read it for 2:17, then closed the app
    core.leave(mock, day2, clock=wall)
    day2.close()

    wall.s += 19 * 86400  # nineteen days later
    day21 = _services(opened, DAY21)
    again = core.resume(day21.store, DAY21, clock=wall)
    assert again is not None and again.round_id == mock.round_id
    assert again.clock(wall()) == "2:17 of 45:00"  # not the nineteen days
    assert again.left_since == DAY2.date()
    note = core.resume_note(again, DAY21.date())
    assert note == (f"Resuming mock round #{mock.round_id} at 2:17 of 45:00: left open since "
                    "2026-03-02 (19 days ago); the time it sat closed is not counted.")
    wall.s += 60
    core.skip(again, day21, clock=wall)  # the first part ends a minute into this sitting
    assert again.items[0].seconds == pytest.approx(197)
    core.abandon(again, day21, clock=wall)
    rep = core.report(again, day21, clock=wall)
    assert rep.elapsed_s == pytest.approx(197)
    assert rep.parts[0].seconds == pytest.approx(197)

    rounds = day21.store.mock_rounds()  # listed and charted on the day it was played
    assert [at.date() for _, at, _, _ in rounds] == [DAY21.date()]
    assert core.history_lines(day21.store)[1].startswith(f"#{mock.round_id} 03-21 ")


def test_a_round_started_under_dojo_now_is_stored_on_that_day(opened: list[Services]) -> None:
    day2 = _services(opened, DAY2)
    mock = core.new_round(day2, 30)
    with Store.open(day2.store.path) as store:
        started = store.study_day(_started_at(store, mock.round_id))
    assert started == DAY2.date() and mock.opened == "2026-03-02"


def _started_at(store: Store, round_id: int | None) -> dt.datetime:
    import sqlite3

    from scheduler.days import from_ms

    with sqlite3.connect(store.path) as conn:
        (ms,) = conn.execute("SELECT started_ms FROM mock_rounds WHERE id = ?",
                             (round_id,)).fetchone()
    return from_ms(ms)


def test_a_short_pause_between_steps_counts_a_long_one_does_not(
        opened: list[Services]) -> None:
    """The CLI answers one step per command: minutes between them are thinking time; a pause
    longer than the whole round is a round left, and the same study day resumes it silently."""
    wall = Wall()
    services = _services(opened, DAY2)
    mock = core.new_round(services, 20, clock=wall)
    core.begin(mock, services, clock=wall)
    wall.s += 300
    again = core.resume(services.store, DAY2, clock=wall)
    assert again is not None and again.elapsed_s(wall()) == pytest.approx(300)
    core.skip(again, services, clock=wall)
    wall.s += 3 * 3600  # longer than the 20-minute round
    later = core.resume(services.store, DAY2, clock=wall)
    assert later is not None and later.elapsed_s(wall()) == pytest.approx(300)
    assert later.left_since is None
    assert core.resume_note(later, DAY2.date()) == (
        f"Resuming mock round #{mock.round_id} at 5:00 of 20:00.")


def test_a_round_saved_with_wall_times_resumes_on_its_own_clock() -> None:
    """Rounds stored before the round kept its own clock held wall times: read as offsets."""
    state = {"started_s": T0, "minutes": 45, "weakest": ["kv-cache"], "finished_s": None,
             "items": [{"kind": "estimate", "ref": {"question": "q", "seed": 1},
                        "topic": "kv-cache", "started_s": T0 + 10, "ended_s": T0 + 70,
                        "score": 1.0},
                       {"kind": "sim", "ref": {"decision": "d"}, "topic": "kv-cache",
                        "started_s": T0 + 70}]}
    mock = core.MockRound.from_state(state, 3)
    assert mock.items[0].seconds == 60 and mock.items[1].started_s == 70
    assert mock.clock(T0 + 10 * 86400) == "1:10 of 45:00"
