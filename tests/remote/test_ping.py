"""The session's ping line (`trainer.core.remote`): what the host reads as a ping, and what it
reads as a request (anything else), and the interval a client asks for."""

from __future__ import annotations

import pytest

from trainer.core.remote import PING_S, parse_ping, ping_interval_s, ping_line


def test_a_ping_round_trips_and_nothing_else_is_one() -> None:
    assert parse_ping(ping_line(0.5)) == 0.5
    assert parse_ping('{"ping": 10}') == 10.0
    for line in ('{"ping": 0}', '{"ping": -1}', '{"ping": true}', '{"ping": "5"}',
                 '{"ping": 5, "exercise": "kv-bytes"}', '{"ping": 5', '{"exercise": "x"}',
                 "ping"):
        assert parse_ping(line) is None, line


@pytest.mark.parametrize(("raw", "expected"), [("", PING_S), ("0.25", 0.25), ("0", PING_S),
                                               ("-3", PING_S), ("soon", PING_S)])
def test_the_interval_comes_from_the_environment_when_it_is_a_positive_number(
        raw: str, expected: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_REMOTE_PING_S", raw)
    assert ping_interval_s() == expected
