"""A plan to the interview day: the pace replaces the new-card limit, and the plan
says whether the learner's own speed fits the daily budget."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from questions.bank import load_bank
from scheduler.feasibility import feasibility
from scheduler.plan import Pace, Plan, paced_new_limit
from scheduler.readiness import day_start
from scheduler.records import Scheduled, Settings
from scheduler.simulate import SimCard
from scheduler.sm2 import CardState
from scheduler.store import Store
from trainer.cli import main
from trainer.core.bank import load_study_bank, sync_bank

D0 = dt.date(2026, 12, 1)


def test_the_pace_introduces_everything_a_week_before_and_nothing_after() -> None:
    plan = Plan(D0 + dt.timedelta(days=21), 30)
    assert paced_new_limit(plan, D0, 290) == 20  # 290 over the 15 days to D0+14
    assert paced_new_limit(plan, D0 + dt.timedelta(days=14), 3) == 3  # the last day
    assert paced_new_limit(plan, D0 + dt.timedelta(days=15), 3) == 0  # the review week
    assert paced_new_limit(plan, D0 + dt.timedelta(days=22), 3) is None  # plan is over


UTC = Settings(timezone="UTC")


def _start(day: dt.date) -> dt.datetime:
    return day_start(day, 4, dt.UTC)


def _new_cards(topics: int, per_topic: int) -> list[SimCard]:
    return [SimCard(f"t{t}-{i}", f"t{t}", Scheduled(CardState(), None, 0, False), None)
            for t in range(topics) for i in range(per_topic)]


def test_an_infeasible_budget_says_what_would_fit() -> None:
    plan = Plan(D0 + dt.timedelta(days=21), 10)
    cards = _new_cards(24, 12)
    fit = feasibility(plan, D0, cards, Pace(answer_s=30), _start, UTC, runs=1)
    assert not fit.feasible and fit.need_minutes > 10
    assert f"the busiest day needs about {fit.need_minutes} min" in fit.reason, fit.reason
    enough = int(fit.reason.split("; at ")[1].split(" min/day")[0])
    assert enough % 5 == 0 and enough >= fit.need_minutes
    assert feasibility(Plan(plan.interview, enough), D0, cards, Pace(30), _start, UTC,
                       runs=1).feasible


def test_pacing_introduces_through_the_day_seven_days_before_as_the_docs_say() -> None:
    plan = Plan(D0 + dt.timedelta(days=21), 30)
    deadline = D0 + dt.timedelta(days=14)  # 7 days before the interview
    assert paced_new_limit(plan, deadline, 28) == 28  # that day introduces what is left
    assert paced_new_limit(plan, deadline + dt.timedelta(days=1), 28) == 0
    root = Path(__file__).resolve().parents[2]
    docs = " ".join((root / "docs" / "readiness.md").read_text().split())
    assert ("ceil(new cards at the start of the day / study days from today to the day 7 days "
            "before the interview, both included)") in docs
    assert "the 6 days after it and the interview day introduce nothing" in docs


def _study_day(store: Store, rng: random.Random, speed_s: tuple[int, int]) -> int:
    """Answer today's whole queue (reviews and new cards), then re-drill to 4; returns the
    number of new cards introduced."""
    queue = store.today_queue()
    for item in queue.reviews + queue.new:
        quality = rng.choice((2, 3, 4, 4, 5, 5))
        result = store.answer(item.question_id, quality, correct=quality >= 3,
                              answer_text="x", response_ms=rng.randint(*speed_s) * 1000)
        while result.needs_redrill:
            quality = rng.choice((3, 4, 5, 5))
            result = store.answer(item.question_id, quality, correct=True, answer_text="x",
                                  response_ms=rng.randint(*speed_s) * 1000, mode="redrill")
    return len(queue.new)


@pytest.mark.slow
def test_a_simulated_learner_meets_the_plan(
    dojo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner who has studied a week at ~20 s an answer sets a plan 21 days out: at 5 and
    30 min/day it is not feasible (the linked lab levels at the stated defaults take over an
    hour a day), and says why; at 150 min/day it is, and every topic is fully introduced by
    day 14."""
    rng = random.Random(5)
    bank = load_study_bank()
    runner = CliRunner()

    def on(day: dt.date) -> None:
        monkeypatch.setenv("DOJO_NOW", f"{day.isoformat()}T12:00:00+00:00")

    def plan_json(*args: str) -> dict[str, object]:
        out = runner.invoke(main, ["plan", *args, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)  # type: ignore[no-any-return]

    with Store.open(dojo_home / "dojo.sqlite3") as store:
        store.update_settings(timezone="UTC")
        sync_bank(store, bank)
        start = D0 - dt.timedelta(days=7)
        for i in range(7):  # a week at the default new-card limit, before planning
            on(start + dt.timedelta(days=i))
            assert _study_day(store, rng, (12, 28)) == 10
    on(D0)
    interview = D0 + dt.timedelta(days=21)
    low = plan_json("--interview", interview.isoformat(), "--minutes", "5")
    assert low["feasible"] is False
    reason = str(low["reason"])
    n_topics = len(load_bank().topics)  # the whole bank, every topic file
    assert "the busiest day needs about" in reason and "min/day it fits" in reason, reason
    cards_only = plan_json("--minutes", "30")
    assert cards_only["feasible"] is False and " lab levels, about " in str(
        cards_only["reason"]), cards_only["reason"]
    levels = int(str(cards_only["reason"]).split(" lab levels, about")[0].rsplit(" ", 1)[1])
    assert levels >= 26  # every level linked from the bank's questions
    report = plan_json("--minutes", "150")
    assert report["feasible"] is True, report["reason"]
    assert set(report) == {"interview", "days_left", "minutes_per_day", "new_per_day",
                           "feasible", "reason", "topics", "horizon", "table"}
    table = report["table"]
    assert isinstance(table, list) and table[0]["minutes_per_day"] is None  # no more study
    budgets = [r["minutes_per_day"] for r in table[1:]]
    assert 150 in budgets and budgets == sorted(budgets)
    shares = [r["mean_recall"] for r in table[1:]]
    # More minutes never cost recall (beyond what the plan needs, the runs differ by noise).
    assert all(b >= a - 0.005 for a, b in itertools.pairwise(shares)), shares
    assert shares[-1] > table[0]["mean_recall"]
    assert report["days_left"] == 21 and report["minutes_per_day"] == 150
    topics = report["topics"]
    assert isinstance(topics, list) and len(topics) == n_topics
    left = sum(t["cards"] - t["introduced"] for t in topics)
    assert report["new_per_day"] == -(-left // 15)  # today to the 14th day, 15 days
    with Store.open(dojo_home / "dojo.sqlite3") as store:
        introduced = last = 0
        for i in range(15):
            on(D0 + dt.timedelta(days=i))
            last = _study_day(store, rng, (12, 28))
            introduced += last
        assert introduced == left
        on(D0 + dt.timedelta(days=15))
        assert not store.today_queue().new  # the last week is for review
    on(D0 + dt.timedelta(days=14))
    day14 = plan_json()
    assert all(t["introduced"] == t["cards"] > 0 for t in day14["topics"]), day14["topics"]
    # the day's pace, as Today counts it: the cards new at its start (all introduced since)
    assert day14["new_per_day"] == last > 0
    on(D0 + dt.timedelta(days=15))
    assert plan_json()["new_per_day"] == 0  # no card left to introduce
    on(D0 + dt.timedelta(days=14))
    assert f"{levels} lab levels" in str(day14["reason"])  # none passed yet
    assert all(0 < t["recall_on_day"] <= 1 for t in day14["topics"])
    with Store.open(dojo_home / "dojo.sqlite3") as store:  # one level passed in 12 min
        level = next((q.lab.exercise, q.lab.level) for q in bank.questions if q.lab)
        store.record_lab_attempt(*level, "cpu", True, [], {}, 3.0)
        store.grade_lab_card(*level, 4, passed=True, rebuild=False, pass_s=720.0)
    after = str(plan_json()["reason"])
    assert f"{levels - 1} lab levels, about" in after and "at your pace" in after, after


def test_lab_levels_to_pass_count_at_the_stated_default_per_level() -> None:
    """Three levels still to pass (L1, L2, L2) at the defaults 30 + 45 + 45 = 120 min, spread
    over the days that introduce the two new cards (one a day over a 15-day window: 2 days)."""
    plan = Plan(D0 + dt.timedelta(days=21), 5)
    cards = _new_cards(1, 2)
    pace = Pace.from_answers([])
    assert (pace.lab_level_minutes(1), pace.lab_level_minutes(2)) == (30, 45)
    assert feasibility(plan, D0, cards, pace, _start, UTC, runs=1).feasible  # cards alone
    fit = feasibility(plan, D0, cards, pace, _start, UTC, lab_levels=[1, 2, 2], runs=1)
    assert not fit.feasible and 61 <= fit.need_minutes <= 62  # 60 of lab + 1-3 answers
    assert "3 lab levels, about 120 min in all (stated defaults: L1 30 / L2 45 min each), " \
        "spread over 2 days" in fit.reason, fit.reason
    assert fit.forecast is not None
    assert [round(x) for x in fit.forecast.lab_minutes if x] == [60, 60]


def test_lab_levels_count_at_the_learners_own_pace_never_zero() -> None:
    # 10 min for an L1 (1/3 of 30) and 30 min for an L2 (2/3 of 45): median 1/2 of the defaults
    pace = Pace.from_answers([], [(1, 600.0), (2, 1800.0), (1, 0.3), (2, None)])
    assert pace.lab_timed == 2 and pace.lab_level_minutes(1) == 15.0
    # One 0.3 s pass is no timing (a kv-bytes L1 passed in 0.3 s): the defaults stay.
    quick = Pace.from_answers([], [(1, 0.3)])
    assert quick.lab_level_minutes(1) == 30.0 and quick.lab_timed == 0
    fast = Pace.from_answers([], [(1, 60.0)])  # 1 min for 30: clamped to half the default
    assert fast.lab_level_minutes(3) == 30.0


def test_lab_levels_spread_over_the_days_that_introduce_cards() -> None:
    """An interview far away: 20 cards at one a day introduce on 20 days; the lab levels are
    spread over those 20 days, not over the whole window."""
    plan = Plan(D0 + dt.timedelta(days=400), 30)
    fit = feasibility(plan, D0, _new_cards(1, 20), Pace(30), _start, UTC, lab_levels=[1] * 4,
                      runs=1)
    assert fit.forecast is not None and fit.forecast.intro_days == 20
    lab_days = [i for i, x in enumerate(fit.forecast.lab_minutes) if x]
    assert lab_days == list(range(20))
    assert fit.need_minutes >= 6 + 1  # 120 min / 20 days + at least one answer


def test_the_paces_median_is_statistics_median() -> None:
    """`Pace` takes medians without importing `statistics`: the same values, ints and floats,
    odd and even counts (a median of the lower middle alone would differ on even counts)."""
    import random
    import statistics

    from scheduler.plan import _median

    rng = random.Random(5)
    for n in range(1, 120):
        ints = [rng.randrange(0, 60_000) for _ in range(n)]
        floats = [rng.uniform(0.1, 5.0) for _ in range(n)]
        assert _median(ints) == statistics.median(ints)
        assert _median(floats) == statistics.median(floats)
    assert _median([1, 2]) == 1.5 != sorted([1, 2])[0]


@pytest.mark.parametrize(("typed", "says"), [
    ("2026-13-01", "'2026-13-01': month must be 1-12, not 13"),
    ("2026-00-10", "'2026-00-10': month must be 1-12, not 0"),
    ("2027-02-29", "'2027-02-29': day must be 1-28 in February 2027, not 29"),
    ("2026-04-31", "'2026-04-31': day must be 1-30 in April 2026, not 31"),
    ("0000-05-01", "'0000-05-01': year must be 0001-9999, not 0000"),
    ("21/12/2026", "'21/12/2026' is not a date YYYY-MM-DD"),
])
def test_dojo_plan_names_the_bad_part_of_a_date(dojo_home: Path, typed: str, says: str) -> None:
    """`dojo plan --interview` says which part of a date is wrong (month 13, 31 April), not
    only that the text is not a date; nothing is stored."""
    out = CliRunner().invoke(main, ["plan", "--interview", typed])
    assert out.exit_code == 2, out.output
    assert f"Invalid value for --interview: {says}" in " ".join(out.output.split())
    with Store.open(dojo_home / "dojo.sqlite3") as store:
        assert store.plan() is None


@pytest.mark.slow
def test_the_table_says_when_labs_take_the_whole_budget(
    dojo_home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new learner with every linked lab level still to pass: the labs' daily share (about
    47 min at the stated defaults) fills the 20 and 45 min/day budgets. Those rows say so in
    words instead of reading "0 answers, 0%" as if studying 45 minutes a day led to nothing;
    the simulated numbers (--json) stay what they were."""
    monkeypatch.setenv("DOJO_NOW", "2026-12-07T10:00:00+00:00")
    runner = CliRunner()
    out = runner.invoke(main, ["plan", "--interview", "2027-01-10", "--minutes", "45"])
    assert out.exit_code == 0, out.output
    shown = runner.invoke(main, ["plan", "--json"])
    table = json.loads(shown.output)["table"]
    labs = table[1]["lab_minutes_per_day"]
    assert 40 < labs < 60 and {r["lab_minutes_per_day"] for r in table[1:]} == {labs}
    full = [r for r in table[1:] if r["minutes_per_day"] <= labs]
    left = [r for r in table[1:] if r["minutes_per_day"] > labs]
    assert [r["minutes_per_day"] for r in full] == [20, 45] and len(left) >= 2
    assert all(r["answers"] == 0 and r["mean_recall"] == 0 for r in full)  # unchanged
    assert all(r["answers"] > 0 for r in left)
    lines = out.output.splitlines()
    assert f"lab levels take about {labs:.0f} min of each budget first" in " ".join(lines)
    for r in full:
        row = [x for x in lines if x.strip().startswith(f"{r['minutes_per_day']} min/day")]
        assert row == [f"    {r['minutes_per_day']} min/day   labs alone take {labs:.0f} "
                       "min/day: no time left for cards"], row
    for r in left:
        row = [x for x in lines if x.strip().startswith(f"{r['minutes_per_day']} min/day")]
        assert len(row) == 1 and f"{r['answers']:>7}   {r['mean_recall']:>4.0%}" in row[0], row


@pytest.mark.slow
def test_dojo_plan_says_cards_begun_in_words(dojo_home: Path) -> None:
    """Each topic line says "N/M cards begun" (answered at least once), not a bare "N/M in",
    with the same counts as --json, under a heading that says what "labs" counts."""
    import re

    runner = CliRunner()
    out = runner.invoke(main, ["plan"])
    assert out.exit_code == 0, out.output
    topics = json.loads(runner.invoke(main, ["plan", "--json"]).output)["topics"]
    assert "weakest first (labs = levels passed):" in " ".join(out.output.split())
    shown = [m.groups() for m in re.finditer(
        r" (\d+)/(\d+) cards begun · labs (\d+)/(\d+)$", out.output, re.MULTILINE)]
    assert shown == [(str(t["introduced"]), str(t["cards"]), str(t["labs_passed"]),
                      str(t["labs_total"])) for t in topics]
    assert len(shown) > 10 and " in · labs " not in out.output
