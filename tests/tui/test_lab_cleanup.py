"""Nothing the lab screen started outlives what the learner did: a grading of
an infinite loop cancelled with `x`, a torch lab graded (its server then prepares the next torch
child ahead), the screen left and the app quit — then no process of the grader is alive, and no
sandbox folder is left in its temporary directory (the server is stopped by SIGTERM). The
real `dojo lab serve` runs the real sandboxes; processes are found by the test's data folder in
their environment (the server and everything below it inherit it)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.worker import WorkerCancelled

from tests.hostile import DETACHED_GRANDCHILD_LOOP, MARKER
from tests.tui.conftest import ready
from tests.tui.test_lab_screen import _graded, _lab
from trainer.app import DojoApp


def _ours(home: Path) -> list[int]:
    tag = f"DOJO_HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if tag in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _none_left(home: Path, seconds: float = 20) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and _ours(home):
        time.sleep(0.1)
    left = _ours(home)
    for pid in left:  # never leave one behind for the next test
        os.kill(pid, signal.SIGKILL)
    return left


def _folders(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(("dojo-sandbox-",
                                                                       "dojo-triton-")))


@pytest.mark.slow
async def test_cancel_leave_and_quit_leave_no_process_running(
        make_app: Callable[..., DojoApp], dojo_home: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the grading server's temporary directory
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")  # kv-bytes L1
        path = screen.workspaces["kv-bytes"]
        path.write_text(DETACHED_GRANDCHILD_LOOP)
        await pilot.press("g")
        for _ in range(600):
            await pilot.pause(0.1)
            if (path.parent / MARKER).exists():
                break
        assert (path.parent / MARKER).exists(), "the learner's code never ran"
        await pilot.press("x")
        assert screen._grading is not None
        with contextlib.suppress(WorkerCancelled):
            await screen._grading.wait()
        await pilot.pause()
        assert _none_left(dojo_home) == []  # cancelled: the loop and its grandchild are gone
        assert _folders(tmp) == []

        listing = screen.query_one("#lab-list")
        rows = [(r.exercise, r.level) for r in screen.rows]
        listing.highlighted = rows.index(("sampling", 1))  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press("s", "g")  # a torch lab: the stub fails, the next child is prepared
        await _graded(screen, pilot)
        assert screen.last_summary is not None and screen.last_summary.passed is False
        assert _ours(dojo_home)  # the warm server (and the child it prepares) is running
        await pilot.press("escape")
        await pilot.pause()
    assert _none_left(dojo_home) == []  # the screen left and the app quit: nothing left
    assert _folders(tmp) == []
