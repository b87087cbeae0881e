"""The plan cache (`scheduler.plan_cache`) never returns a plan computed from other inputs: each
input the simulation depends on, changed on its own, misses an entry kept for the old inputs
(one whose result was tampered with, so returning it would be seen) and gives what a fresh
computation gives. Dropping any part from the key makes its case fail."""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from scheduler import plan_cache
from scheduler.days import resolve_timezone
from scheduler.feasibility import Feasibility, feasibility
from scheduler.fsrs_memory import Memory
from scheduler.plan import Pace, Plan
from scheduler.plan_cache import CACHE_NAME, KEEP, plan_feasibility
from scheduler.readiness import day_start
from scheduler.records import Scheduled, Settings
from scheduler.simulate import SimCard
from scheduler.sm2 import CardState

D0 = dt.date(2026, 3, 2)


def _cards() -> list[SimCard]:
    """12 reviewed cards (due over the next days, with FSRS memories) and 12 new ones."""
    out = []
    for i in range(24):
        topic = f"t{i % 3}"
        if i < 12:
            last = dt.datetime(2026, 2, 20 + i % 6, 12, tzinfo=dt.UTC)
            out.append(SimCard(f"q{i}", topic, Scheduled(CardState(250, 2, 6),
                                                         D0 + dt.timedelta(days=i % 5), 0, False),
                               Memory(3.0 + i, 5.0, last)))
        else:
            out.append(SimCard(f"q{i}", topic, Scheduled(CardState(), None, 0, False), None))
    return out


BASE: dict[str, Any] = {
    "plan": Plan(D0 + dt.timedelta(days=21), 30), "today": D0, "cards": _cards(),
    "pace": Pace(answer_s=20.0, first_right=0.7), "settings": Settings(timezone="UTC"),
    "parameters": None, "lab_levels": [1], "version": "0.1.0",
}


def _answered(cards: list[SimCard]) -> list[SimCard]:
    """One new card answered (as the store leaves it: scheduled, with a memory)."""
    out = list(cards)
    card = out[12]
    out[12] = dataclasses.replace(
        card, scheduled=Scheduled(CardState(250, 1, 1), D0 + dt.timedelta(days=1), 0, False),
        memory=Memory(2.3, 6.0, dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)))
    return out


def _relearned(cards: list[SimCard]) -> list[SimCard]:
    """One reviewed card's memory moved, its schedule as it was."""
    out = list(cards)
    assert out[0].memory is not None
    out[0] = dataclasses.replace(out[0], memory=dataclasses.replace(out[0].memory,
                                                                    stability=30.0))
    return out


# FSRS-6's default weights with the first four (initial stabilities) doubled: a learner's fit.
FITTED = [0.424, 2.5862, 4.613, 16.5912, 6.4133, 0.8334, 3.0194, 0.001, 1.8722, 0.1666, 0.796,
          1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658, 0.1542]

def _moved(card: SimCard) -> SimCard:
    """The card due a day later, all else as it was."""
    assert card.scheduled.due is not None
    return dataclasses.replace(card, scheduled=dataclasses.replace(
        card.scheduled, due=card.scheduled.due + dt.timedelta(days=1)))


CHANGES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "an answer": lambda b: {**b, "cards": _answered(b["cards"])},
    "a card's memory only": lambda b: {**b, "cards": _relearned(b["cards"])},
    "a card's due day only": lambda b: {**b, "cards": [_moved(b["cards"][0]), *b["cards"][1:]]},
    "a card suspended": lambda b: {**b, "cards": b["cards"][1:]},
    "a card's topic": lambda b: {**b, "cards": [dataclasses.replace(b["cards"][0], topic="t9"),
                                                *b["cards"][1:]]},
    "a new day": lambda b: {**b, "today": D0 + dt.timedelta(days=1)},
    "the interview date": lambda b: {**b, "plan": Plan(D0 + dt.timedelta(days=28), 30)},
    "the minutes a day": lambda b: {**b, "plan": Plan(b["plan"].interview, 10)},
    "the pace": lambda b: {**b, "pace": Pace(answer_s=45.0, first_right=0.7)},
    "the lab pace": lambda b: {**b, "pace": Pace(20.0, 0.7, lab_factor=2.0, lab_timed=1)},
    "a scheduler switch": lambda b: {**b, "settings": Settings(timezone="UTC",
                                                               scheduler="fsrs")},
    "the desired retention": lambda b: {**b, "settings": Settings(timezone="UTC",
                                                                  desired_retention=0.8)},
    "the review limit": lambda b: {**b, "settings": Settings(timezone="UTC", review_limit=3)},
    "the rollover hour": lambda b: {**b, "settings": Settings(timezone="UTC", rollover_hour=0)},
    "the time zone": lambda b: {**b, "settings": Settings(timezone="Asia/Tokyo")},
    "the FSRS parameters": lambda b: {**b, "parameters": FITTED},
    "a lab level passed": lambda b: {**b, "lab_levels": []},
    "the app's version": lambda b: {**b, "version": "0.2.0"},
}


def _fresh(inputs: dict[str, Any]) -> Feasibility:
    """The feasibility computed now, as the cache returns it (no forecast, no table)."""
    settings = inputs["settings"]
    tz = resolve_timezone(settings.timezone)
    fit = feasibility(inputs["plan"], inputs["today"], inputs["cards"], inputs["pace"],
                      lambda day: day_start(day, settings.rollover_hour, tz), settings,
                      inputs["parameters"], inputs["lab_levels"])
    return Feasibility(fit.feasible, fit.reason, fit.need_minutes, fit.new_per_day)


def _tamper(folder: Path) -> None:
    """Keep each entry's key, change its result: returning one for other inputs would show."""
    path = folder / CACHE_NAME
    data = json.loads(path.read_text())
    assert data["entries"]
    for entry in data["entries"]:
        entry.update(reason="STALE", need_minutes=-1)
    path.write_text(json.dumps(data))


def test_the_kept_plan_is_returned_for_the_same_inputs(tmp_path: Path) -> None:
    first = plan_feasibility(tmp_path, **BASE)
    assert first == _fresh(BASE) and "min" in first.reason
    _tamper(tmp_path)
    assert plan_feasibility(tmp_path, **BASE).reason == "STALE"  # read, not recomputed
    assert plan_feasibility(tmp_path, **{**BASE, "cards": list(BASE["cards"])}).reason == "STALE"


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_input_changed_gives_a_fresh_plan(tmp_path: Path, change: str) -> None:
    plan_feasibility(tmp_path, **BASE)
    _tamper(tmp_path)
    changed = CHANGES[change](BASE)
    assert changed != BASE
    got = plan_feasibility(tmp_path, **changed)
    assert got.reason != "STALE", f"{change}: the plan kept for other inputs came back"
    assert got == _fresh(changed)
    assert plan_feasibility(tmp_path, **changed) == got  # kept for these inputs now


def test_changed_code_gives_a_fresh_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    plan_feasibility(tmp_path, **BASE)
    _tamper(tmp_path)
    monkeypatch.setattr(plan_cache, "code_digest", lambda: "another program")
    assert plan_feasibility(tmp_path, **BASE) == _fresh(BASE)


def test_the_code_digest_covers_the_simulation_and_fsrs() -> None:
    plan_cache.code_digest.cache_clear()
    names: list[str] = []
    real = Path.read_bytes

    def spy(path: Path) -> bytes:
        names.append(f"{path.parent.name}/{path.name}")
        return real(path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "read_bytes", spy)
        plan_cache.code_digest()
    plan_cache.code_digest.cache_clear()
    for module in ("simulate", "feasibility", "next_states", "transition", "fsrs_memory",
                   "fsrs_arith", "sm2", "plan"):
        assert f"scheduler/{module}.py" in names
    assert "fsrs/scheduler.py" in names


def _imports_outside(sources: Sequence[str]) -> list[str]:
    """'module -> imported' for each `scheduler` module that one of `sources` imports and
    `sources` lacks."""
    out: list[str] = []
    for name in sources:
        tree = ast.parse((Path(plan_cache.__file__).parent / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scheduler"):
                module = str(node.module)
                found = ([module.split(".")[1]] if "." in module
                         else [alias.name for alias in node.names])
                out += [f"{name} -> {m}" for m in found if m not in sources]
    return out


def test_the_code_digest_covers_every_scheduler_module_the_plan_imports() -> None:
    """A module the simulation imports and the digest left out would keep a stale plan after
    a change of that module's code."""
    assert _imports_outside(plan_cache._SOURCES) == []
    without = tuple(m for m in plan_cache._SOURCES if m != "fsrs_arith")
    assert _imports_outside(without) == ["simulate -> fsrs_arith"]


def test_an_unreadable_or_unwritable_cache_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / CACHE_NAME).write_text("{not json")
    assert plan_feasibility(tmp_path, **BASE) == _fresh(BASE)  # and replaced
    assert json.loads((tmp_path / CACHE_NAME).read_text())["entries"][0]["reason"] == _fresh(
        BASE).reason
    missing = tmp_path / "no-such-folder"
    assert plan_feasibility(missing, **BASE) == _fresh(BASE)
    assert not missing.exists()
    assert plan_feasibility(None, **BASE) == _fresh(BASE)


def test_the_latest_entries_are_kept(tmp_path: Path) -> None:
    """Today's plan and the next day's computed ahead are both read back; the oldest of more
    than KEEP goes."""
    days = [CHANGES["a new day"](BASE), BASE] + [
        {**BASE, "plan": Plan(D0 + dt.timedelta(days=22 + n), 30)} for n in range(KEEP - 1)]
    for inputs in days:
        plan_feasibility(tmp_path, **inputs)
    _tamper(tmp_path)
    # Read latest first (a miss writes an entry, which would push an older one out).
    assert [plan_feasibility(tmp_path, **inputs).reason == "STALE"
            for inputs in reversed(days)] == [True] * KEEP + [False]


def test_the_systems_time_zone_changed_gives_a_fresh_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time zone set, study days start at the rollover hour of the system's zone: a
    learner who travels gets the plan for the new zone, not the one kept for the old."""
    import time

    local = {**BASE, "settings": Settings(timezone=None)}
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        plan_feasibility(tmp_path, **local)
        _tamper(tmp_path)
        assert plan_feasibility(tmp_path, **local).reason == "STALE"
        monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14: every day starts 14 h earlier
        time.tzset()
        got = plan_feasibility(tmp_path, **local)
        assert got.reason != "STALE" and got == _fresh(local)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_feasibility_computed_by_the_caller_is_kept_not_computed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dojo plan` hands over the feasibility its table computed: it is kept (without its
    forecast) under the same key, and the next start reads it."""
    settings = BASE["settings"]
    tz = resolve_timezone(settings.timezone)
    full = feasibility(BASE["plan"], BASE["today"], BASE["cards"], BASE["pace"],
                       lambda day: day_start(day, settings.rollover_hour, tz), settings,
                       BASE["parameters"], BASE["lab_levels"])
    assert full.forecast is not None

    def never(*args: object, **kwargs: object) -> Feasibility:
        raise AssertionError("simulated again")

    monkeypatch.setattr(plan_cache, "feasibility", never)
    kept = plan_feasibility(tmp_path, **BASE, computed=full)
    assert kept == _fresh(BASE) and kept.forecast is None
    assert plan_feasibility(tmp_path, **BASE) == kept
    with pytest.raises(AssertionError, match="simulated again"):
        plan_feasibility(tmp_path, **{**BASE, "today": BASE["today"] + dt.timedelta(days=1)})
