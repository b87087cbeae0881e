"""The mock round (`dojo mock`): its content is answerable, it is drawn from the weakest topics,
it resumes after the app closes, and a whole round run through the CLI records its score."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from lab.sims import SIMS, SimInputError
from lab.sims.decisions import DECISIONS
from questions.design import design_prompts, parse_points
from scheduler.records import TopicAccuracy
from scheduler.store import Store
from tests.mock.helpers import right_answer, solve_lab
from trainer.cli import main
from trainer.core import mock as core
from trainer.core.services import Services

FIXTURE_BANK = Path(__file__).resolve().parents[1] / "tui" / "fixtures" / "bank"


@pytest.mark.parametrize("d", DECISIONS, ids=lambda d: d.id)
def test_each_sim_decision_fails_as_told_and_its_example_passes(d: object) -> None:
    from lab.sims.decisions import Decision

    assert isinstance(d, Decision)
    assert not SIMS[d.sim].evaluate(d.start()).all_passed, "the scenario must start failing"
    assert set(d.example) <= set(d.dials)
    assert d.evaluate(d.example).all_passed
    assert not d.evaluate({}).all_passed
    policy = next(s.name for s in SIMS[d.sim].inputs if s.name not in d.dials)
    with pytest.raises(SimInputError, match="not yours to turn"):
        d.evaluate({policy: SIMS[d.sim].spec(policy).default})


def test_a_sim_answer_is_typed_as_on_the_command_line() -> None:
    from lab.sims.decisions import decision

    fleet = decision("fleet-idle-b200")
    assert fleet.parse("owned_cards=1,000, rented_share=50%") == {"owned_cards": 1000,
                                                                 "rented_share": 0.5}
    assert decision("capacity-70b-seats").parse("gpus=8; kv_bytes=1") == {"gpus": 8,
                                                                         "kv_bytes": 1.0}


def test_design_rubrics_have_four_to_six_points_on_bank_topics() -> None:
    from questions.bank import BUILTIN_DIR

    topics = {p.stem for p in BUILTIN_DIR.glob("*.toml")}
    prompts = design_prompts()
    assert len(prompts) >= 5
    for p in prompts:
        assert 4 <= len(p.rubric) <= 6 and p.topic in topics, p.id
    assert parse_points("3, 1 3", 5) == [0, 2] and parse_points("all", 4) == [0, 1, 2, 3]
    assert parse_points("none", 5) == []
    with pytest.raises(ValueError, match="'6' is not a point"):
        parse_points("1 6", 5)


def test_weakest_topics_put_the_most_missed_first_and_unseen_in_the_middle() -> None:
    bank = SimpleNamespace(topics={"a": 0, "b": 0, "c": 0}, by_topic=lambda t: [t])
    accuracy = {"a": TopicAccuracy("a", 10, 9), "c": TopicAccuracy("c", 4, 1)}
    services = SimpleNamespace(bank=bank, store=SimpleNamespace(topic_accuracy=lambda: accuracy,
                                                                plan=lambda: None))
    assert core.weakest_topics(services) == ["c", "b", "a"]  # type: ignore[arg-type]


@pytest.fixture
def services() -> Iterator[Services]:
    opened = Services.open(bank_paths=[FIXTURE_BANK])
    yield opened
    opened.close()


def test_with_a_plan_the_round_ranks_topics_by_recall_on_the_day(services: Services) -> None:
    """Missed answers make a topic the weakest by accuracy; with a plan the ranking is the
    predicted recall on the interview day instead, where a topic never studied (0) is weaker
    than one studied and missed (its cards still hold some recall)."""
    import datetime as dt

    from scheduler.days import utc_now
    from scheduler.plan import Plan

    now = services.now or utc_now()
    topic = next(t for t in services.bank.topics if services.bank.by_topic(t))
    for q in services.bank.by_topic(topic):
        services.store.answer(q.id, 1, correct=False, answer_text="x", response_ms=1000, now=now)
    assert core.weakest_topics(services)[0] == topic  # by accuracy: missed ranks first
    services.store.set_plan(Plan(now.date() + dt.timedelta(days=14), 30))
    recall = core.topic_recall_on_day(services)
    assert recall is not None and recall[topic] > 0
    assert all(v == 0 for t, v in recall.items() if t != topic)
    assert core.weakest_topics(services)[-1] == topic


def test_a_round_resumes_after_the_app_is_closed(services: Services) -> None:
    mock = core.new_round(services, 30)
    kinds = [i.kind for i in mock.items]
    assert kinds == ["estimate"] * 4 + ["sim", "design", "lab"]
    view = core.begin(mock, services)
    assert view is not None and "1/7" in view.title
    first = right_answer(mock, services)
    core.answer(mock, "1e30", services)  # a wrong estimate is named
    services.close()

    with Store.open() as store:
        again = core.resume(store)
    assert again is not None and again.round_id == mock.round_id
    assert again.position == 2 and again.items[0].score == 0.0
    assert again.items[0].mistakes and "expected" in again.items[0].mistakes[0]
    assert again.items[1].ref == mock.items[1].ref  # the same draw, the same fresh numbers
    assert first  # the right answer existed: the round was answerable


@pytest.mark.slow
def test_a_whole_round_through_the_cli_records_its_score(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "choose_lab", lambda bank, weak: ("kv-bytes", 1, "kv-cache"))
    runner = CliRunner()
    out = runner.invoke(main, ["mock", "--minutes", "20"])
    assert out.exit_code == 0, out.output
    assert "1/7 · Estimates" in out.output and "of 20:00" in out.output


    for _ in range(40):
        opened = Services.open()
        try:
            mock = core.resume(opened.store)
            assert mock is not None
            item = mock.current
            assert item is not None
            if item.kind == "lab":
                break
            text = right_answer(mock, opened)
        finally:
            opened.close()
        out = runner.invoke(main, ["mock", "answer", text])
        assert out.exit_code == 0, out.output
    assert "kv-bytes L1" in out.output and "dojo mock grade" in out.output
    out = runner.invoke(main, ["lab", "hint", "kv-bytes"])
    assert "hints are off" in out.output  # interview rules
    solve_lab("kv-bytes")
    out = runner.invoke(main, ["mock", "grade", "--device", "cpu"])
    assert out.exit_code == 0, out.output
    assert "kv-bytes L1 passed" in out.output
    assert re.search(r"Mock round #\d+: 100% in", out.output), out.output

    report = json.loads(runner.invoke(main, ["mock", "report", "--json"]).output)
    assert report["score"] == 1.0 and report["mistakes"] == [] and report["study_next"] == []
    assert [p["kind"] for p in report["parts"]] == ["estimate", "sim", "design", "lab"]
    assert all(p["seconds"] >= 0 for p in report["parts"])
    with Store.open() as store:
        rounds = store.mock_rounds()
        assert [score for _, _, score, _ in rounds] == [1.0]
        assert store.open_mock_round() is None
        assert store.lab_levels_passed() == {("kv-bytes", 1)}  # the pass counts like any other
    again = runner.invoke(main, ["mock", "answer", "1"])
    assert again.exit_code == 2 and "start one with `dojo mock`" in again.output
