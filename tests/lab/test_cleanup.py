"""No process or folder the grader started outlives it: the grader's own code raising mid-grading,
the grader stopped by SIGTERM, SIGHUP or SIGINT in the middle of an infinite loop ends every
process and removes its sandbox's folder, exits 143 / 129 / 130 and says why on its terminal;
killed by SIGKILL (no handler runs) it still leaves no process running — every process of the
grading (the learner's, a detached grandchild of theirs, the sandbox's waiter) ends by itself: the
waiter watches a lifeline pipe whose other end only the grader holds — and the next grading sweeps
the folder it left, never the folder of a grading still running (another user's included). The
TUI's grading server is stopped by the app (SIGTERM, then SIGKILL) and dies with it
(PR_SET_PDEATHSIG: SIGTERM), each time with its folders. Checked with user namespaces and on a
system that denies them (Landlock)."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.grader import landlock, scratch
from tests.hostile import DETACHED_GRANDCHILD_LOOP, MARKER
from tests.lab.conftest import ROOT, default_signals
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
import asyncio, os, subprocess, sys, time
from pathlib import Path
from lab.exercises import get
from tests import lab_state
from trainer.core.lab_serve import SERVE_PARENT_VAR, GradingServer, ServeRequest
lab_state.start(get('kv-bytes'), Path.cwd())  # the server grades this folder's file
STOP = sys.argv[1] == 'stop'

async def main():
    server = await GradingServer.start([sys.executable, '-m', 'trainer', 'lab'])
    await server.send(ServeRequest('kv-bytes', 1))
    if STOP:  # the screen's cancel and quit: `stop` once the learner's code runs (the test
        while not Path('go').exists():  # says so when it has seen it)
            await asyncio.sleep(0.1)
        await server.stop()
        Path('stopped').write_text(str(server.process.returncode))
    await asyncio.sleep(600)

asyncio.run(main())
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


class _Grading:
    """A grader (or app) process started as the learner, with its own data folder and its
    own temporary folder (TMPDIR), and its stderr on a terminal of its own."""

    def __init__(self, folder: Path, argv: list[str], deny: bool,
                 text: str = DETACHED_GRANDCHILD_LOOP, stdout: Path | None = None) -> None:
        ws, self.home, self.tmp = folder / "ws", folder / "home", folder / "tmp"
        self.tmp.mkdir(exist_ok=True)
        _owned(self.tmp)
        (ws / "kv_bytes.py").write_text(text)
        _owned(ws / "kv_bytes.py")
        env = {**os.environ, "DOJO_HOME": str(self.home), "PYTHONPATH": str(ROOT),
               "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(self.tmp)}
        self.terminal, tty = pty.openpty()
        try:
            with open(stdout or os.devnull, "wb") as out:
                self.proc = subprocess.Popen([sys.executable, *argv], cwd=str(ws), env=env,
                                             stdout=out, stderr=tty,
                                             preexec_fn=default_signals(_preexec(deny)))
        finally:
            os.close(tty)

    def folders(self) -> list[str]:
        return sorted(n for n in os.listdir(self.tmp) if n.startswith(scratch.PREFIXES))

    def said(self) -> str:
        """What the process wrote on its terminal (it has ended)."""
        out = b""
        with contextlib.suppress(OSError):  # EIO: the other side is closed and drained
            while chunk := os.read(self.terminal, 4096):
                out += chunk
        os.close(self.terminal)
        return out.decode(errors="replace")


def _running(grading: _Grading, learner_dir: Path) -> None:
    """Wait until the learner's code (and its detached grandchild) runs in a sandbox."""
    assert _wait_for((learner_dir / "ws" / MARKER).exists, 120), "the learner's code never ran"
    started = _ours(grading.home)
    assert len(started) >= 3, started  # the grader, the waiter, the learner's processes


def _nothing_running(home: Path) -> None:
    left: list[int] = []
    try:
        assert _wait_for(lambda: not _ours(home), 20), _ours(home)
    finally:
        left = _ours(home)
        for pid in left:  # never leave one behind for the next test, whatever happened
            os.kill(pid, signal.SIGKILL)
    assert left == []


GRADE = ["-m", "trainer", "lab", "grade", "kv-bytes", "--level", "1", "--file"]
STOPS = [pytest.param(signal.SIGTERM, 143, "Stopped by SIGTERM.", False, id="SIGTERM"),
         pytest.param(signal.SIGHUP, 129, "Stopped by SIGHUP.", False, id="SIGHUP"),
         pytest.param(signal.SIGINT, 130, "Interrupted.", False, id="SIGINT"),
         pytest.param(signal.SIGTERM, 143, "Stopped by SIGTERM.", True, id="SIGTERM-landlock",
                      marks=pytest.mark.skipif(landlock.abi_version() < 1,
                                               reason="no Landlock in this kernel"))]


@pytest.mark.parametrize(("sig", "status", "message", "deny"), STOPS)
def test_a_stopped_grader_ends_its_processes_and_removes_its_folder(
        learner_dir: Path, sig: int, status: int, message: str, deny: bool) -> None:
    grading = _Grading(learner_dir, [*GRADE, str(learner_dir / "ws" / "kv_bytes.py")], deny)
    _running(grading, learner_dir)
    mine = grading.folders()
    assert len(mine) == 1 and mine[0].startswith(f"dojo-sandbox-{grading.proc.pid}-")
    # a sweep meanwhile (here as root, the grading as `nobody` when the tests run as root)
    # keeps the folder of a grading that still runs
    assert scratch.sweep(str(grading.tmp)) == []
    assert grading.folders() == mine
    grading.proc.send_signal(sig)
    assert grading.proc.wait(timeout=60) == status
    _nothing_running(grading.home)
    assert grading.folders() == []
    assert grading.said().strip().splitlines()[-1] == message


@pytest.mark.skipif(not CONFINED, reason="no namespaces")
def test_watch_stopped_while_its_prepared_child_waits_removes_that_childs_folder(
        learner_dir: Path) -> None:
    """`dojo lab watch` on a torch lab: after the stub's grading the next child is prepared
    (torch imported) while the learner edits; SIGTERM then ends it and removes its folder."""
    stub = learner_dir / "ws" / "sampling.py"
    stub.write_text((ROOT / "lab" / "exercises" / "sampling" / "stub.py").read_text())
    _owned(stub)
    out = learner_dir / "out.txt"
    watch = _Grading(learner_dir, ["-m", "trainer", "lab", "watch", "sampling", "--level", "1",
                                   "--file", str(stub)], False, stdout=out)
    assert _wait_for(lambda: "Watching" in out.read_text(), 120), out.read_text()
    assert _wait_for(lambda: len(_ours(watch.home)) >= 2, 60)  # the prepared child's waiter
    assert len(watch.folders()) == 1  # the prepared child's
    watch.proc.send_signal(signal.SIGTERM)
    assert watch.proc.wait(timeout=60) == 143
    _nothing_running(watch.home)
    assert watch.folders() == []
    assert watch.said().strip().splitlines()[-1] == "Stopped by SIGTERM."


@pytest.mark.parametrize("deny", MODES)
def test_a_killed_grader_leaves_nothing_running_and_the_next_grading_sweeps_its_folder(
        learner_dir: Path, deny: bool) -> None:
    killed = _Grading(learner_dir, [*GRADE, str(learner_dir / "ws" / "kv_bytes.py")], deny)
    _running(killed, learner_dir)
    killed.proc.send_signal(signal.SIGKILL)
    killed.proc.wait()
    _nothing_running(killed.home)
    left = killed.folders()  # no handler ran: the folder stays, named for its dead owner
    assert len(left) == 1 and scratch.owner_alive(left[0]) is False
    killed.said()
    # the next grading (a stub's: it fails at once) sweeps it, and removes its own
    stub = learner_dir / "ws" / "stub.py"
    stub.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                    "    raise NotImplementedError\n")
    _owned(stub)
    nxt = _Grading(learner_dir, [*GRADE, str(stub)], deny)
    assert nxt.proc.wait(timeout=120) == 1
    nxt.said()
    assert killed.folders() == []


@pytest.mark.parametrize(("how", "deny"), [
    pytest.param("stop", False, id="stopped-namespaces",
                 marks=pytest.mark.skipif(not CONFINED, reason="no namespaces")),
    *[pytest.param("kill", d.values[0], id=f"app-killed-{d.id}", marks=d.marks)
      for d in MODES]])
def test_the_apps_grading_server_ends_with_its_sandboxes_and_folders(
        learner_dir: Path, how: str, deny: bool) -> None:
    """The TUI's case: the app starts `dojo lab serve` in a session of its own; while the server
    grades an infinite loop the app stops it (the screen's cancel, leaving it, quitting) or is
    killed itself (the server then gets SIGTERM from the kernel)."""
    app = _Grading(learner_dir, ["-c", APP, how], deny)
    _running(app, learner_dir)
    assert len(app.folders()) == 1
    if how == "stop":
        (learner_dir / "ws" / "go").write_text("")
        stopped = learner_dir / "ws" / "stopped"
        assert _wait_for(stopped.exists, 30)
        assert stopped.read_text() == "143"  # it ended through its SIGTERM handler
    app.proc.send_signal(signal.SIGKILL)
    app.proc.wait()
    _nothing_running(app.home)
    app.said()
    assert app.folders() == []


class _Boom(Exception):
    pass


@pytest.mark.skipif(not CONFINED, reason="no namespaces")
def test_an_exception_in_the_grader_ends_its_children_and_removes_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader's own code raising mid-grading (here the event sink, at the first case's
    result) takes the same way out: the exception reaches the caller, nothing is left."""
    from lab.grader.testing import grade_file

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path = tmp_path / "kv_bytes.py"
    path.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n    return 0\n")
    seen: list[str] = []

    def emit(event: object) -> None:
        if type(event).__name__ in ("CasePassed", "CaseFailed"):  # the child has answered
            seen.extend(n for n in os.listdir(tmp_path) if n.startswith(scratch.PREFIXES))
            assert _sandboxes_of(tmp_path)  # its child is alive here
            raise _Boom

    with pytest.raises(_Boom):
        grade_file("kv-bytes", path, 1, emit=emit)
    assert len(seen) == 1  # the sandbox's folder, while the case ran
    assert [n for n in os.listdir(tmp_path) if n.startswith(scratch.PREFIXES)] == []
    assert _sandboxes_of(tmp_path) == []


def _sandboxes_of(workspace: Path) -> list[int]:
    """Processes carrying a sandbox token whose command line names `workspace` (a sandbox
    child's --workspace; the learner's forks inherit that command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if b"DOJO_SANDBOX_TOKEN=" not in f.read():
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if str(workspace).encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


SERVE_WITH_SLOW_IMPORTS = """
import sys, time
import lab.grader.spawn as spawn
spawn.Prepared._import = lambda self: time.sleep(600)  # this process's torch never arrives
sys.argv = ["dojo", "lab", "serve"]
from trainer.launch import main
main()
"""


def test_the_server_stopped_while_preparing_does_not_wait_for_its_own_imports(
        tmp_path: Path) -> None:
    """The app gives `dojo lab serve` 5 s after SIGTERM (STOP_GRACE_S), then SIGKILL, which
    leaves the prepared child's folder. After a grading the server prepares the next one's
    child and imports its modules on a thread (torch, transformers: 4-9 s at load, here
    forever); stopped then, it closed that child waiting for those imports. On the way out it
    no longer waits: it ends within the grace, status 143, no folder left."""
    from lab.exercises import get
    from tests import lab_state
    from trainer.core.lab_serve import STOP_GRACE_S

    home, tmp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for folder in (home, tmp, work):
        folder.mkdir()
    env = {**os.environ, "DOJO_HOME": str(home), "TMPDIR": str(tmp)}
    os.environ["DOJO_HOME"], saved = str(home), os.environ.get("DOJO_HOME")
    try:
        lab_state.start(get("sampling"), work)
    finally:
        if saved is None:
            del os.environ["DOJO_HOME"]
        else:
            os.environ["DOJO_HOME"] = saved
    proc = subprocess.Popen([sys.executable, "-c", SERVE_WITH_SLOW_IMPORTS], cwd=work, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=default_signals)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"exercise": "sampling", "level": 1}\n')  # the stub fails
        proc.stdin.flush()
        for line in proc.stdout:  # then the server prepares the next grading's child
            if b'"served"' in line:
                break
        assert _wait_for(lambda: any(tmp.glob("dojo-sandbox-*")), 120), "no child prepared"
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 143, "still cleaning up when the app would SIGKILL it"
        assert list(tmp.glob("dojo-sandbox-*")) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
