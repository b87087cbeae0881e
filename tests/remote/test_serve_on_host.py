"""`dojo lab serve` (the TUI's grading server) with lab_host set: a prepare request connects to
the host ahead of the grading (kept for the next), a grading request is answered with the host's
events and a closing `served`, recorded here; a host that refuses answers rc 3 with its
sentence."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from click.testing import CliRunner

from trainer.cli import main
from trainer.core.lab_serve import GradingServer, PrepareReply, Served, ServeRequest

pytestmark = pytest.mark.slow


async def _until_served(server: GradingServer) -> tuple[list[Any], list[str], int]:
    events: list[Any] = []
    text: list[str] = []
    while (reply := await server.reply()) is not None:
        if isinstance(reply, Served):
            return events, text, reply.rc
        if isinstance(reply, str):
            text.append(reply)
        elif not isinstance(reply, PrepareReply):
            events.append(reply)
    raise AssertionError(f"the server ended: {text}")


async def test_serve_connects_ahead_and_grades_on_the_host(on_host: str) -> None:
    from scheduler.store import Store

    runner = CliRunner()
    assert runner.invoke(main, ["lab", "start", "kv-bytes"]).exit_code == 0
    assert runner.invoke(main, ["settings", f"lab_host={on_host}"]).exit_code == 0
    server = await GradingServer.start([sys.executable, "-m", "trainer", "lab"])
    try:
        await server.send(ServeRequest("kv-bytes", 1, prepare=True))
        first = await server.reply()
        await server.send(ServeRequest("kv-bytes", 1, prepare=True))
        second = await server.reply()
        assert isinstance(first, PrepareReply) and (first.ready, first.kept) == (True, False)
        assert isinstance(second, PrepareReply) and (second.ready, second.kept) == (True, True)
        await server.send(ServeRequest("kv-bytes", 1))
        events, _text, rc = await _until_served(server)
        assert rc == 1 and events[0].host == on_host and events[-1].host == on_host
        assert events[-1].stored is True
        assert runner.invoke(main, ["settings", "lab_host=dojo-wrong-key"]).exit_code == 0
        await server.send(ServeRequest("kv-bytes", 1))
        events, text, rc = await _until_served(server)
        assert rc == 3 and events == []
        assert text == ["Error: dojo-wrong-key refused the login (Permission denied): add your "
                        "public key to its ~/.ssh/authorized_keys, load it with ssh-add, or "
                        "set the User in ~/.ssh/config."]
    finally:
        await server.stop()
    with Store.open() as store:
        assert [a.metrics.get("host") for a in store.lab_attempts()] == [on_host]
