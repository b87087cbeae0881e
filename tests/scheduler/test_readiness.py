"""Readiness = predicted recall on the interview day: anyone can recompute each
topic's `recall_on_day` from `dojo export` with the `fsrs` package, following
docs/readiness.md. This test is that independent recomputation."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fsrs import Card, Rating, Scheduler

from tests.scheduler.learner import simulate_history
from trainer.cli import main
from trainer.core.bank import load_study_bank

TODAY = dt.date(2026, 11, 2)
INTERVIEW = dt.date(2026, 11, 20)


def _recompute(export: dict[str, Any], interview_start: dt.datetime) -> dict[str, float]:
    """docs/readiness.md, step by step, with nothing from this app."""
    scheduler = Scheduler(enable_fuzzing=False, learning_steps=(), relearning_steps=())
    grade = {0: Rating.Again, 1: Rating.Again, 2: Rating.Again, 3: Rating.Hard,
             4: Rating.Good, 5: Rating.Easy}
    memory: dict[str, Card] = {}
    for i, r in enumerate(sorted(export["reviews"], key=lambda r: r["reviewed_ms"])):
        card = memory.get(r["question_id"]) or Card(card_id=i + 1)
        when = dt.datetime.fromtimestamp(r["reviewed_ms"] / 1000, dt.UTC)
        memory[r["question_id"]], _ = scheduler.review_card(card, grade[r["quality"]], when)
    per_topic: dict[str, list[float]] = {}
    for c in export["cards"]:
        if c["retired"] or c["suspended"]:
            continue
        values = per_topic.setdefault(c["topic"], [])
        if c["due"] is not None:  # introduced: answered on the schedule
            values.append(scheduler.get_card_retrievability(memory[c["question_id"]],
                                                             interview_start))
    return {t: sum(v) / len(v) if v else 0.0 for t, v in per_topic.items()}


@pytest.mark.slow
def test_recall_on_day_matches_an_independent_fsrs_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = load_study_bank()
    by_topic: dict[str, list[str]] = {}
    for q in bank.study_order():
        by_topic.setdefault(q.topic, []).append(q.id)
    studied = {t: ids[:6] for t, ids in list(by_topic.items())[:8]}  # 8 topics, 6 cards each
    history = simulate_history(dt.date(2026, 8, 1), (TODAY - dt.date(2026, 8, 1)).days,
                               topics=studied)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    monkeypatch.setenv("DOJO_NOW", f"{TODAY.isoformat()}T10:00:00+00:00")
    runner = CliRunner()
    for args in (["settings", "timezone=UTC", "rollover_hour=4"], ["import", str(path)],
                 ["plan", "--interview", INTERVIEW.isoformat(), "--minutes", "45"]):
        out = runner.invoke(main, args)
        assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["plan", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    exported = runner.invoke(main, ["export"])
    assert exported.exit_code == 0
    expected = _recompute(json.loads(exported.stdout),
                          dt.datetime.combine(INTERVIEW, dt.time(4), dt.UTC))
    got = {t["topic"]: t["recall_on_day"] for t in report["topics"]}
    assert got.keys() == expected.keys()
    for topic, value in expected.items():
        assert got[topic] == pytest.approx(value, abs=0.01), topic
    assert sum(0.3 < v < 1 for v in expected.values()) == 8  # the studied topics
    assert sum(v == 0 for v in expected.values()) == len(expected) - 8  # the rest
    recalls = [t["recall_on_day"] for t in report["topics"]]
    assert recalls == sorted(recalls)  # weakest first
