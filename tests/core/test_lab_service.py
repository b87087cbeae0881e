"""The lab service of the core (`trainer.core.lab_serve`): the `dojo lab serve` protocol read and
written typed, and its client against a stand-in server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lab.grader import events
from trainer.core.lab_serve import (
    GradingServer,
    PrepareReply,
    Served,
    ServeRequest,
    parse_reply,
)

FIXTURES = Path(__file__).parents[1] / "tui" / "fixtures"


def _failure() -> events.CaseFailed:
    return events.CaseFailed(
        level=1, case="L1-k3", required=True, duration_s=0.25, metrics={"median_ratio": 1.5},
        output="", kind="wrong", message="off by one", traceback="", params={"k": 3}, size=3,
        expected="4", got="3", seed=7, replay="dojo lab grade x --seed 7")


def test_replies_come_back_as_the_typed_events_the_grader_emitted() -> None:
    failure = _failure()
    assert parse_reply(events.to_json(failure)) == failure
    assert parse_reply(Served(1).to_json()) == Served(1)
    assert parse_reply(PrepareReply(True, False, 0.5).to_json()) == PrepareReply(True, False, 0.5)
    # plain output of the server is text for the log; an event this version does not know
    # is skipped, as the format promises
    assert parse_reply("Traceback (most recent call last):") == "Traceback (most recent call last):"
    assert parse_reply('{"not": "an event"}') == '{"not": "an event"}'
    assert parse_reply('{"event": "from_the_future", "x": 1}') is None
    # a server of another version: unknown keys ignored, missing fields empty
    old = parse_reply('{"event": "summary", "passed": true, "extra": 1}')
    assert isinstance(old, events.Summary) and old.passed and old.device == ""


def test_requests_are_written_as_the_server_reads_them_and_bad_ones_refused() -> None:
    grade = ServeRequest("kv-bytes", 2)
    assert grade.to_json() == '{"exercise": "kv-bytes", "level": 2}'  # no "prepare" key
    prepare = ServeRequest("spec-verify", None, prepare=True)
    assert ServeRequest.parse(grade.to_json()) == grade
    assert ServeRequest.parse(prepare.to_json()) == prepare
    for bad in ("not json", "[1]", '{"exercise": 3}', '{"exercise": "x", "level": true}',
                '{"exercise": "x", "level": "2"}'):
        assert ServeRequest.parse(bad) is None, bad


async def test_the_client_talks_to_a_server_and_stops_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    requests = tmp_path / "requests.jsonl"
    monkeypatch.setenv("DOJO_TEST_REQUESTS", str(requests))
    server = await GradingServer.start([sys.executable,
                                        str(FIXTURES / "lab" / "recording_server.py")])
    try:
        await server.send(ServeRequest("kv-bytes", 1, prepare=True))
        assert await server.reply() == PrepareReply(True, False)
        await server.send(ServeRequest("kv-bytes", 1))
        started = await server.reply()
        assert isinstance(started, events.RunStarted) and started.exercise == "kv-bytes"
        summary = await server.reply()
        assert isinstance(summary, events.Summary) and summary.passed is False
        assert await server.reply() == Served(1)
        assert server.running
    finally:
        await server.stop()
    assert not server.running
    assert requests.read_text().splitlines() == [
        '{"exercise": "kv-bytes", "level": 1, "prepare": true}',
        '{"exercise": "kv-bytes", "level": 1}']
