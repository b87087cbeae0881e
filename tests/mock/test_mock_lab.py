"""The mock round's lab part: the level drawn is the exercise's first one not
passed (a blank stub of paged-kv L4 when only L1 has passed helps nobody), and the learner
grades as often as they need until a pass or the round's clock ends the part."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.exercises import get
from tests.lab_state import interview
from tests.mock.helpers import solve_lab
from trainer.core import mock as core
from trainer.core.mock import MockRound, Part
from trainer.core.services import Services

FIXTURE_BANK = Path(__file__).resolve().parents[1] / "tui" / "fixtures" / "bank"


@pytest.fixture
def services() -> Iterator[Services]:
    opened = Services.open(bank_paths=[FIXTURE_BANK])
    yield opened
    opened.close()


def test_the_first_level_not_passed_is_drawn() -> None:
    assert core.first_open_level("paged-kv", 4, {("paged-kv", 1)}) == 2
    assert core.first_open_level("paged-kv", 4, set()) == 1
    assert core.first_open_level("paged-kv", 3, {("paged-kv", 1), ("kv-bytes", 2)}) == 2
    every = {("paged-kv", n) for n in get("paged-kv").level_numbers}
    assert core.first_open_level("paged-kv", 3, every) == 3  # all passed: the linked one


def test_a_new_round_draws_the_next_level_not_passed(
        services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "choose_lab", lambda bank, weak: ("paged-kv", 4, "kv-cache"))
    services.store.record_lab_attempt("paged-kv", 1, "cpu", True, [], {}, 1.0)
    mock = core.new_round(services, 30)
    assert mock.items[-1].ref == {"exercise": "paged-kv", "level": 2}


def _lab_round(services: Services) -> MockRound:
    mock = MockRound(started_s=0.0, minutes=30, weakest=[],
                     items=[Part("lab", {"exercise": "kv-bytes", "level": 1}, "kv-cache")])
    core.save(mock, services, lambda: 0.0)
    return mock


@pytest.mark.slow
def test_the_lab_part_stays_open_until_a_pass(services: Services) -> None:
    mock = _lab_round(services)
    assert core.begin(mock, services, lambda: 0.0) is not None
    ex = get("kv-bytes")
    failed = core.grade_lab(mock, services, lambda: 60.0, device="cpu")  # the blank stub
    assert failed.reask and not failed.item_done
    assert failed.lines[0] == "kv-bytes L1 failed."
    assert failed.lines[-1] == ("Fix it and grade again (29:00 left on the round's clock; "
                                "skipping gives the part up).")
    assert mock.current is mock.items[0] and interview(ex) is not None  # still rehearsing
    solve_lab("kv-bytes")
    passed = core.grade_lab(mock, services, lambda: 120.0, device="cpu")
    assert passed.item_done and passed.round_done
    assert mock.items[0].score == 1.0 and mock.items[0].answers == ["failed", "passed"]
    assert mock.items[0].mistakes == []  # passed in the end
    assert interview(ex) is None


@pytest.mark.slow
def test_a_failure_after_the_clock_ran_out_ends_the_part(services: Services) -> None:
    mock = _lab_round(services)
    core.begin(mock, services, lambda: 0.0)
    late = core.grade_lab(mock, services, lambda: 31 * 60.0, device="cpu")
    assert late.item_done and not late.reask
    assert mock.items[0].score == 0.0 and len(mock.items[0].mistakes) == 1
    assert interview(get("kv-bytes")) is None  # the learner's own file is back
