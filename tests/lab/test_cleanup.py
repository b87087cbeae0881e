"""No process the grader started outlives it: the grader killed with SIGKILL in
the middle of an infinite loop, the TUI's grading server killed the same way, and the app that
started that server killed — each time, every process of the grading (the learner's, a detached
grandchild of theirs, the sandbox's waiter) ends by itself: the waiter watches a lifeline pipe
whose other end only the grader holds, and the server dies with its parent (PR_SET_PDEATHSIG).
Checked with user namespaces and on a system that denies them (Landlock)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.grader import landlock
from tests.hostile import DETACHED_GRANDCHILD_LOOP, MARKER
from tests.lab.conftest import ROOT
from tests.lab.test_confinement import CONFINED, _owned, _preexec, learner_dir

__all__ = ["learner_dir"]  # the fixture: a folder the learner's user owns

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")]
MODES = [pytest.param(False, id="namespaces",
                      marks=pytest.mark.skipif(not CONFINED, reason="no namespaces")),
         pytest.param(True, id="userns-denied",
                      marks=pytest.mark.skipif(landlock.abi_version() < 1,
                                               reason="no Landlock in this kernel"))]
APP = """
import os, subprocess, sys, time
from pathlib import Path
from lab.exercises import get
from tests import lab_state
from trainer.core.lab_serve import SERVE_PARENT_VAR
lab_state.start(get('kv-bytes'), Path.cwd())  # the server grades this folder's file
server = subprocess.Popen([sys.executable, '-m', 'trainer', 'lab', 'serve'],
                          stdin=subprocess.PIPE, start_new_session=True,
                          env={**os.environ, SERVE_PARENT_VAR: str(os.getpid())})
server.stdin.write(b'{"exercise": "kv-bytes", "level": 1}\\n')
server.stdin.flush()
time.sleep(600)
"""


def _ours(home: Path) -> list[int]:
    """Processes whose environment names this test's data folder (the grader and all it
    started inherit it), but this test's own."""
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


def _wait_for(check: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def _start(folder: Path, argv: list[str], deny: bool) -> tuple[subprocess.Popen[bytes], Path]:
    ws, home = folder / "ws", folder / "home"
    (ws / "kv_bytes.py").write_text(DETACHED_GRANDCHILD_LOOP)
    _owned(ws / "kv_bytes.py")
    env = {**os.environ, "DOJO_HOME": str(home), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([sys.executable, *argv], cwd=str(ws), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_preexec(deny))
    return proc, home


def _kill_and_check(proc: subprocess.Popen[bytes], learner_dir: Path, home: Path) -> None:
    grandchild = learner_dir / "ws" / MARKER
    assert _wait_for(grandchild.exists, 120), "the learner's code never ran"
    started = _ours(home)
    assert len(started) >= 3, started  # the grader, the waiter, the learner's processes
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left: list[int] = []
    try:
        assert _wait_for(lambda: not _ours(home), 20), _ours(home)
    finally:
        left = _ours(home)
        for pid in left:  # never leave one behind for the next test, whatever happened
            os.kill(pid, signal.SIGKILL)
    assert left == []


@pytest.mark.parametrize("deny", MODES)
def test_a_killed_grader_leaves_nothing_running(learner_dir: Path, deny: bool) -> None:
    proc, home = _start(learner_dir, ["-m", "trainer", "lab", "grade", "kv-bytes", "--level", "1",
                                   "--file", str(learner_dir / "ws" / "kv_bytes.py")], deny)
    _kill_and_check(proc, learner_dir, home)


@pytest.mark.parametrize("deny", MODES)
def test_a_killed_app_takes_its_grading_server_and_sandboxes_along(learner_dir: Path,
                                                                   deny: bool) -> None:
    """The TUI's case: the app starts `dojo lab serve` in a session of its own and is killed
    while the server grades an infinite loop."""
    proc, home = _start(learner_dir, ["-c", APP], deny)
    _kill_and_check(proc, learner_dir, home)
