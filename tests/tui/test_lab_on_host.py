"""The Lab screen grades through the lab_host setting: its `dojo lab serve` sends the file to the
host over a real sshd on loopback, the events come back to the table, the screen says where it
ran, and the attempt is recorded here with the host; a host that refuses says its sentence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.remote.conftest import on_host, remote_root, sshd  # noqa: F401 (fixtures)
from tests.tui.conftest import ready
from tests.tui.test_lab_screen import _graded, _lab
from trainer.app import DojoApp

pytestmark = pytest.mark.slow


def _set_host(host: str) -> None:
    from scheduler.store import Store

    with Store.open() as store:
        store.update_settings(lab_host=host)


async def test_the_lab_screen_grades_on_the_configured_host(
        make_app: Callable[..., DojoApp], on_host: str) -> None:  # noqa: F811
    from scheduler.store import Store

    _set_host(on_host)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        await pilot.press("g")
        await _graded(screen, pilot)
        summary = screen.last_summary
        assert summary is not None and summary.passed is False and summary.host == on_host
        assert summary.stored is True
        log = "\n".join(screen.log_lines)
        assert f"--json --on {on_host}" in log
        assert f"graded on cpu at {on_host})" in log
        assert "not implemented" in log  # the host's failure, in the table and the log
    with Store.open() as store:
        rows = store.lab_attempts()
    assert [(a.exercise, a.level, a.passed, a.metrics.get("host")) for a in rows] == [
        ("kv-bytes", 1, False, on_host)]


async def test_a_host_that_refuses_says_why_and_records_nothing(
        make_app: Callable[..., DojoApp], on_host: str) -> None:  # noqa: F811
    from scheduler.store import Store

    _set_host("dojo-wrong-key")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        await pilot.press("g")
        await _graded(screen, pilot)
        assert screen.last_summary is None
        title = str(screen.query_one("#lab-results-title").render())
        assert title.startswith("kv-bytes L1: not graded — dojo-wrong-key refused the login")
        notes = [n.message for n in app._notifications]
        assert any(n.startswith("dojo-wrong-key refused the login (Permission denied)")
                   for n in notes)
    with Store.open() as store:
        assert store.lab_attempts() == []


async def test_a_grading_on_a_gpu_host_names_the_card_and_the_host(
        make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch) -> None:
    """What `dojo lab serve` relays from a GPU host (its events, as the host sent them)."""
    import json
    import sys

    import trainer.screens.lab as lab_screen

    started = {"event": "run_started", "exercise": "kv-bytes", "title": "KV", "solution": "x",
               "device": "cuda", "device_note": "NVIDIA H100 80GB HBM3 (auto)", "seed": 1,
               "replay": "r", "levels": [], "host": "gpu-box"}
    summary = {"event": "summary", "exercise": "kv-bytes", "device": "cuda", "seed": 1,
               "passed": True, "levels": {"1": True}, "duration_s": 1.5, "replay": "r",
               "stored": True, "store_error": "", "host": "gpu-box"}
    script = ("import sys\nsys.stdin.readline()\n"
              + "".join(f"print({json.dumps(json.dumps(e))})\n" for e in (started, summary))
              + "print('{\"event\": \"served\", \"rc\": 0}', flush=True)\nsys.stdin.read()\n")
    monkeypatch.setattr(lab_screen, "lab_command", lambda dojo: [sys.executable, "-c", script])
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        await pilot.press("g")
        await _graded(screen, pilot)
        log = "\n".join(screen.log_lines)
        assert "Grading kv-bytes on cuda (NVIDIA H100 80GB HBM3 (auto)) at gpu-box" in log
        assert "(1.5 s, graded on cuda — NVIDIA H100 80GB HBM3 (auto) at gpu-box)" in log
