"""The docs and the app say the same thing: one test per disagreement an
independent recomputation found, each asserting what the code does and what the text says."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from scheduler.fsrs_schedule import learnable
from scheduler.store import Store
from tests.scheduler.conftest import at, grade
from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_true_retention_counts_the_scheduled_review_not_the_first_answer(store: Store) -> None:
    store.sync_cards([("a", "t")])
    day, now = 1, at(1)
    for _ in range(4):  # 1, 6, 15, 38 days: mature (>= 21) before the last review
        result = grade(store, "a", 4, now)
        day += (result.due - now.date()).days
        now = at(day)
    assert store.card("a").interval >= 21
    grade(store, "a", 0, now.replace(hour=9), mode="cram")  # the day's first answer: a miss
    grade(store, "a", 4, now)  # the scheduled review: a pass
    retention = store.true_retention(1, now)
    assert (retention.passed, retention.total) == (1, 1)
    text = " ".join(CliRunner().invoke(main, ["stats", "--help"]).output.split())
    assert "scheduled reviews only (never re-drill or cram)" in text
    assert "first answer of the day" not in text


def test_distributions_leave_out_suspended_cards_as_the_forecast_does(store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t")])
    grade(store, "a", 5, at(1))
    grade(store, "b", 4, at(1))
    assert sum(store.ef_distribution().values()) == 2
    store.suspend("a")
    assert store.ef_distribution() == {store.card("b").ef: 1}
    assert sum(store.interval_distribution().values()) == 1
    assert sum(store.forecast(30, at(1)).values()) == 1


@pytest.mark.slow
def test_a_lab_recall_of_an_introduced_card_carries_its_due_day(
    dojo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(dojo_home / "dojo.sqlite3") as store:
        store.update_settings(timezone="UTC")
        store.sync_cards([("kv-cache-001", "kv-cache"), ("kv-cache-002", "kv-cache")])
        grade(store, "kv-cache-001", 4, at(3, 10))
        store.add_lab_recalls([("kv-cache-001", "kv", 1, "c1"), ("kv-cache-002", "kv", 1, "c1")],
                              now=at(3))
    monkeypatch.setenv("DOJO_NOW", at(3, 16).isoformat())
    out = CliRunner().invoke(main, ["due", "--json"])
    assert out.exit_code == 0, out.output
    items = {i["question_id"]: i for i in json.loads(out.output)["items"]
             if i.get("reason") == "lab"}
    assert items["kv-cache-001"]["due"] == "2026-03-04"  # introduced: its next due day
    assert items.get("kv-cache-002", {"due": None})["due"] is None  # never answered: no due


def test_export_is_dated_by_dojo_now(dojo_home: Path, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    monkeypatch.setenv("DOJO_NOW", "2031-05-06T07:08:09+00:00")
    path = tmp_path / "h.json"
    out = CliRunner().invoke(main, ["export", str(path)])
    assert out.exit_code == 0, out.output
    assert json.loads(path.read_text())["exported_at"] == "2031-05-06T07:08:09+00:00"


def test_fit_counts_answers_24_hours_after_the_previous_one_as_the_docs_say() -> None:
    late = dt.datetime(2026, 3, 1, 23, tzinfo=dt.UTC)
    history = {"a": [(late, 4), (late + dt.timedelta(hours=6), 4),  # a later day, 6 h after
                     (late + dt.timedelta(hours=30), 4)]}  # 24 h after the previous
    assert learnable(history) == 1
    docs = " ".join((ROOT / "docs" / "readiness.md").read_text().split())
    assert "given at least 24 hours after the card's previous one" in docs
    assert "on a later day than the card's previous one" not in docs
    text = " ".join(CliRunner().invoke(main, ["fsrs", "fit", "--help"]).output.split())
    assert "at least 24 hours after the card's previous one" in text


def test_stats_define_true_retention_beside_predicted_recall(store: Store) -> None:
    from trainer.core.stats import PREDICTED_RECALL_MEANS, TRUE_RETENTION_MEANS

    store.sync_cards([("a", "t")])
    grade(store, "a", 4, at(1))
    assert store.predicted_recall(at(1)) == pytest.approx(1.0)
    later = store.predicted_recall(at(20))
    assert later is not None and 0 < later < 0.9  # recall fades; S ~ 2.3 d after one Good
    assert "scheduled reviews" in TRUE_RETENTION_MEANS and "right now" in PREDICTED_RECALL_MEANS


def test_plan_wording_counts_days_in_the_singular_and_after_the_interview() -> None:
    from scheduler.feasibility import feasibility
    from scheduler.plan import Pace, Plan
    from scheduler.readiness import day_start
    from scheduler.records import Scheduled, Settings
    from scheduler.simulate import SimCard
    from scheduler.sm2 import CardState
    from trainer.core.plan import PlanReport, plan_lines

    today = dt.date(2026, 3, 1)
    new = [SimCard("a", "t", Scheduled(CardState(), None, 0, False), None)]
    fit = feasibility(Plan(today + dt.timedelta(days=1), 30), today, new, Pace(),
                      lambda d: day_start(d, 4, dt.UTC), Settings(timezone="UTC"), runs=1)
    assert "the interview is in 1 day and 1 card is still new" in fit.reason, fit.reason
    for days_left, says in ((-1, "1 day ago"), (0, "today"), (2, "2 days left")):
        plan = Plan(today + dt.timedelta(days=days_left), 30)
        report = PlanReport(plan, today, at(1), days_left, 0, False, "", [])
        head = plan_lines(report)[0]
        assert says in head and "-1" not in head, head
