"""The home screen read before the store opens (`quick_today_view`: plain sqlite3 and the cached
study index) equals the store's own view, plan included, on the real bank and a real history;
and gives way to the store wherever only it can say."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler.plan import Plan
from scheduler.store import Store
from trainer.core.bank import study_index
from trainer.core.plan import Outline, PlanReport
from trainer.core.services import Services
from trainer.core.views import TodayView, quick_today_view

START = dt.datetime(2026, 9, 1, 9, 0, tzinfo=dt.UTC)


def _pin(monkeypatch: pytest.MonkeyPatch, moment: dt.datetime) -> None:
    monkeypatch.setenv("DOJO_NOW", moment.replace(tzinfo=None).isoformat())


def _store_view(moment: dt.datetime) -> TodayView:
    services = Services.open(now=moment)
    try:
        return services.today()  # the plan too
    finally:
        services.close()


def _history(days: int, lab_pass: bool = True) -> list[str]:
    """`days` study days of answers through the store on the real bank (a day off a week,
    cards suspended and buried, with `lab_pass` a lab level passed on the last day: its card is
    due the next day); returns the bank's question ids."""
    rng = random.Random(52)
    services = Services.open(now=START)
    store = services.store
    store.update_settings(timezone="UTC", new_limit=12)
    linked = next(q for q in services.bank.questions if q.lab is not None)
    for day in range(days):
        now = START + dt.timedelta(days=day)
        if day % 7 == 5:
            continue
        queue = store.today_queue(now)
        for n, item in enumerate([*queue.reviews, *queue.new][:20]):
            right = rng.random() < 0.8
            store.answer(item.question_id, 4 if right else 1, correct=right, answer_text="x",
                         response_ms=9000, now=now + dt.timedelta(minutes=n))
        if day == days - 1 and lab_pass:
            assert linked.lab is not None
            store.record_lab_attempt(linked.lab.exercise, linked.lab.level, "cpu", True, [], {},
                                     30.0, now=now)
            store.grade_lab_card(linked.lab.exercise, linked.lab.level, 5, passed=True,
                                 rebuild=False, now=now)
        if day == 6:
            store.suspend(queue.reviews[0].question_id)
            store.bury(queue.reviews[1].question_id, now)
    ids = [q.id for q in services.bank.questions]
    services.close()
    return ids


@pytest.mark.slow
def test_the_quick_home_equals_the_stores_view(monkeypatch: pytest.MonkeyPatch) -> None:
    _history(12)
    checked = 0
    for moment in (START + dt.timedelta(days=11, hours=8),  # the last day, mid-day: re-drills
                   START + dt.timedelta(days=12, hours=-8)):  # its evening
        _pin(monkeypatch, moment)
        expected = _store_view(moment)  # opening it makes today's backup, syncs the cards
        view = quick_today_view()
        assert view is not None, "the quick path gave way on a plain history"
        assert view.plan is not None and view.plan.topics
        assert expected.warnings == () and expected.rebuilds == ()
        assert view == expected
        assert sum(view.per_day.values()) > 100 and sum(view.forecast) > 0
        assert any(t.labs_passed for t in view.plan.topics)  # the lab pass counted
        checked += 1
    assert checked == 2
    assert expected.redrill > 0  # re-drills pending to count
    # A quick path that lost the lab links would show other lab counts in the plan: caught.
    real_of = Outline.of

    def without_labs(study, titles, links):  # type: ignore[no-untyped-def]
        return real_of(study, titles, [])

    monkeypatch.setattr(Outline, "of", without_labs)
    quick = quick_today_view()
    assert quick is not None
    assert [f.name for f in dataclasses.fields(TodayView)
            if getattr(quick, f.name) != getattr(expected, f.name)] == ["plan"]


@pytest.mark.slow
def test_the_quick_home_with_an_interview_date_equals_the_stores_view(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a date set the quick path runs the plan's simulation itself (the day's first
    start: nothing cached), then reads it from the plan cache, equal to the store's view both
    times, with no plan cache as with one."""
    from scheduler.plan_cache import CACHE_NAME

    _history(12)
    moment = START + dt.timedelta(days=11, hours=8)
    _pin(monkeypatch, moment)
    home = Path(os.environ["DOJO_HOME"])
    with Store.open(home / "dojo.sqlite3") as store:
        store.update_settings(scheduler="fsrs")  # the quick read must use every setting
        store.set_plan(Plan(dt.date(2026, 10, 10), 45))
    assert not (home / CACHE_NAME).exists()
    first = quick_today_view()
    assert first is not None and first.plan is not None
    assert (home / CACHE_NAME).exists()  # kept for the next start
    (home / CACHE_NAME).rename(home / "kept.json")
    expected = _store_view(moment)  # computed afresh: no cache
    assert expected.plan is not None and expected.plan.plan == Plan(dt.date(2026, 10, 10), 45)
    assert "min" in expected.plan.reason and expected.plan.new_per_day
    assert first == expected
    (home / "kept.json").replace(home / CACHE_NAME)
    assert quick_today_view() == expected  # from the cache


@pytest.mark.slow
def test_gives_way_to_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _history(5)
    moment = START + dt.timedelta(days=4, hours=10)
    _pin(monkeypatch, moment)
    assert quick_today_view() is not None  # the day's first start, before today's backup
    _store_view(moment)
    assert quick_today_view() is not None
    _pin(monkeypatch, START + dt.timedelta(days=5, hours=1))
    assert quick_today_view() is None  # the lab level passed yesterday is due for a rebuild
    _pin(monkeypatch, moment)
    db = Path(os.environ["DOJO_HOME"]) / "dojo.sqlite3"
    with Store.open(db) as store:
        store.update_settings(desired_retention=0.85)
    assert quick_today_view() is not None  # every setting the quick read knows
    import sqlite3

    with sqlite3.connect(db) as conn:  # unusable: the store warns and uses 0.90
        conn.execute("UPDATE settings SET value = '0.2' WHERE key = 'desired_retention'")
    assert quick_today_view() is None
    with Store.open(db) as store:
        store.update_settings(desired_retention=0.9)
        store.set_plan(None)
        # A card the next sync would change: only the store's open can say what it serves.
        store.sync_cards([(i, "elsewhere") for i in ids[:1]], retire_missing=False)
    assert quick_today_view() is None
    _store_view(moment)  # the store's open syncs the cards back
    assert quick_today_view() is not None
    index = study_index()
    assert index is not None
    import trainer.core.bank as bank_module

    monkeypatch.setattr(bank_module, "study_index",
                        lambda: dataclasses.replace(index, problem_files=("broken.toml",)))
    assert quick_today_view() is None  # the bank's errors are worded by the bank


def _fresh_plan(db: Path, moment: dt.datetime) -> PlanReport:
    """The plan computed now from the store's data, no cache."""
    from scheduler.readiness import FSRS_PARAMETERS_KEY
    from trainer.core.plan import planned_report

    index = study_index()
    assert index is not None
    with Store.open(db) as store:
        plan = store.plan()
        assert plan is not None
        return planned_report(store.settings(), store.study_day(moment), plan, store.cards(),
                              store.stored_value(FSRS_PARAMETERS_KEY),
                              store.lab_levels_passed(),
                              Outline.of(index.questions, dict(index.topics), index.labs),
                              store.pace(), None)


@pytest.mark.slow
def test_the_home_never_shows_a_plan_kept_for_other_inputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After an answer, on a new day, with another interview date and after a scheduler
    switch, the plan on the home (read before the store opens) is the one computed afresh,
    never the one the plan cache kept for the inputs before (tampered with, so it would
    show)."""
    import json

    from scheduler.plan_cache import CACHE_NAME

    _history(12, lab_pass=False)
    home = Path(os.environ["DOJO_HOME"])
    db = home / "dojo.sqlite3"
    with Store.open(db) as store:
        store.set_plan(Plan(dt.date(2026, 10, 10), 45))
    moment = START + dt.timedelta(days=12, hours=1)  # the day after the history: reviews due

    def shown() -> PlanReport:
        _pin(monkeypatch, moment)
        view = quick_today_view()
        assert view is not None and view.plan is not None
        return view.plan

    def tamper() -> None:
        data = json.loads((home / CACHE_NAME).read_text())
        for entry in data["entries"]:
            entry["reason"] = "STALE"
        (home / CACHE_NAME).write_text(json.dumps(data))

    assert shown() == _fresh_plan(db, moment)
    tamper()
    assert shown().reason == "STALE"  # the home reads the cache: a stale entry would show
    with Store.open(db) as store:
        due = store.today_queue(moment).reviews[0].question_id
        store.answer(due, 1, correct=False, answer_text="x", response_ms=4000, now=moment)
    steps = {
        "an answer": lambda: None,
        "a new day": lambda: None,
        "another interview date": lambda: _with_store(db, lambda s: s.set_plan(
            Plan(dt.date(2026, 10, 20), 45))),
        "a scheduler switch": lambda: _with_store(db, lambda s: s.update_settings(
            scheduler="fsrs")),
    }
    for step, change in steps.items():
        if step == "a new day":
            moment += dt.timedelta(days=1)
        change()
        got = shown()
        assert got.reason != "STALE", f"{step}: the plan kept for other inputs was shown"
        assert got == _fresh_plan(db, moment), step
        tamper()


def _with_store(db: Path, change: Callable[[Store], object]) -> None:
    with Store.open(db) as store:
        change(store)


def _shows_the_kept_plan(home: Path) -> None:
    """The start reads the plan cache: every kept entry's reason changed, the home shows the
    change (a plan simulated again would not)."""
    import json

    from scheduler.plan_cache import CACHE_NAME

    data = json.loads((home / CACHE_NAME).read_text())
    for entry in data["entries"]:
        entry["reason"] = "STALE"
    (home / CACHE_NAME).write_text(json.dumps(data))
    view = quick_today_view()
    assert view is not None and view.plan is not None and view.plan.reason == "STALE"


@pytest.mark.slow
def test_the_next_days_plans_are_computed_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the home computes ahead (`prepare_days_ahead`) is what the first start of each of
    the next AHEAD_DAYS days shows, read from the cache rather than simulated (a learner back
    after a day or two away); nothing is computed without a plan, nor for the interview day
    or after it; the day after the last one computed simulates afresh."""
    import json

    from scheduler.plan_cache import AHEAD_DAYS, CACHE_NAME
    from trainer.core.plan import prepare_days_ahead

    assert AHEAD_DAYS == 3
    _history(12, lab_pass=False)
    home = Path(os.environ["DOJO_HOME"])
    db = home / "dojo.sqlite3"
    moment = START + dt.timedelta(days=12, hours=1)
    services = Services.open(now=moment)
    try:
        assert prepare_days_ahead(services.store, services.bank, moment) == 0  # no plan
        services.store.set_plan(Plan(moment.date() + dt.timedelta(days=1), 45))
        assert prepare_days_ahead(services.store, services.bank, moment) == 0  # tomorrow is it
        services.store.set_plan(Plan(moment.date() + dt.timedelta(days=3), 45))
        assert prepare_days_ahead(services.store, services.bank, moment) == 2  # days 1 and 2
        (home / CACHE_NAME).unlink()
        services.store.set_plan(Plan(dt.date(2026, 10, 10), 45))
        assert prepare_days_ahead(services.store, services.bank, moment) == AHEAD_DAYS
    finally:
        services.close()
    assert len(json.loads((home / CACHE_NAME).read_text())["entries"]) == AHEAD_DAYS
    for ahead in (3, 1):  # back after two days away; the next day
        later = moment + dt.timedelta(days=ahead)
        _pin(monkeypatch, later)
        view = quick_today_view()
        assert view is not None and view.plan is not None
        assert view.plan.today == later.date()
        assert view.plan == _fresh_plan(db, later)
        data = json.loads((home / CACHE_NAME).read_text())
        assert len(data["entries"]) == AHEAD_DAYS  # read, not computed again
    _shows_the_kept_plan(home)
    _pin(monkeypatch, moment + dt.timedelta(days=AHEAD_DAYS + 1))  # beyond: simulated
    view = quick_today_view()
    assert view is not None and view.plan is not None and view.plan.reason != "STALE"
    assert len(json.loads((home / CACHE_NAME).read_text())["entries"]) == AHEAD_DAYS + 1


@pytest.mark.slow
def test_dojo_plan_keeps_todays_plan_and_the_days_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A date set from the CLI (`dojo plan --interview`) leaves today's plan and the next
    AHEAD_DAYS days' in the cache, so the app's first start shows it without simulating; what
    it keeps is the plan computed afresh."""
    import json

    from click.testing import CliRunner

    from scheduler.plan_cache import AHEAD_DAYS, CACHE_NAME
    from trainer.cli import main

    _history(10, lab_pass=False)
    home = Path(os.environ["DOJO_HOME"])
    moment = START + dt.timedelta(days=10, hours=1)
    _pin(monkeypatch, moment)
    out = CliRunner().invoke(main, ["plan", "--interview", "2026-10-20", "--minutes", "40"])
    assert out.exit_code == 0, out.output
    data = json.loads((home / CACHE_NAME).read_text())
    assert len(data["entries"]) == 1 + AHEAD_DAYS
    for ahead in (0, 2):
        later = moment + dt.timedelta(days=ahead)
        _pin(monkeypatch, later)
        view = quick_today_view()
        assert view is not None and view.plan is not None
        assert view.plan == _fresh_plan(home / "dojo.sqlite3", later)
        assert ahead or view.plan.reason[:30] in out.output  # what `dojo plan` printed
    assert json.loads((home / CACHE_NAME).read_text()) == data  # read, nothing computed
    _shows_the_kept_plan(home)


@pytest.mark.slow
def test_quitting_the_app_keeps_the_plan_of_its_last_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A card answered and the app quit before the home showed the plan again (Ctrl+Q on a
    card): the next start reads today's plan for that answer instead of simulating."""
    import json

    from scheduler.plan_cache import AHEAD_DAYS, CACHE_NAME
    from trainer import app as app_module

    _history(10, lab_pass=False)
    home = Path(os.environ["DOJO_HOME"])
    db = home / "dojo.sqlite3"
    moment = START + dt.timedelta(days=10, hours=1)
    with Store.open(db) as store:
        store.set_plan(Plan(dt.date(2026, 10, 20), 40))
    _pin(monkeypatch, moment)
    before = _fresh_plan(db, moment)

    def session(app: app_module.DojoApp) -> None:  # opened, one card answered, quit
        app.services = Services.open(now=moment)
        store = app.services.store
        item = store.today_queue(moment).reviews[0]
        store.answer(item.question_id, 1, correct=False, answer_text="x", response_ms=9000,
                     now=moment)

    monkeypatch.setattr(app_module.DojoApp, "run", session)
    app_module.run_app()
    data = json.loads((home / CACHE_NAME).read_text())
    assert len(data["entries"]) == 1 + AHEAD_DAYS
    view = quick_today_view()
    assert view is not None and view.plan is not None
    assert view.plan == _fresh_plan(db, moment) != before
    assert json.loads((home / CACHE_NAME).read_text()) == data  # read, nothing computed
    _shows_the_kept_plan(home)


@pytest.mark.slow
def test_a_read_only_store_keeps_no_plan_cache() -> None:
    """Browsing a read-only database writes nothing beside it: its plan is computed, not kept."""
    from scheduler.plan_cache import CACHE_NAME
    from trainer.core.bank import load_study_bank
    from trainer.core.plan import plan_report, prepare_days_ahead

    _history(3, lab_pass=False)
    home = Path(os.environ["DOJO_HOME"])
    moment = START + dt.timedelta(days=3, hours=1)
    with Store.open(home / "dojo.sqlite3") as store:
        store.set_plan(Plan(dt.date(2026, 10, 10), 45))
    bank = load_study_bank()
    with Store.open(home / "dojo.sqlite3", read_only=True) as store:
        report = plan_report(store, bank, moment)
        assert report.plan is not None and "min" in report.reason
        assert prepare_days_ahead(store, bank, moment) == 0
    assert not (home / CACHE_NAME).exists()
    with Store.open(home / "dojo.sqlite3") as store:  # a writable one keeps it
        assert plan_report(store, bank, moment) == report
    assert (home / CACHE_NAME).exists()
