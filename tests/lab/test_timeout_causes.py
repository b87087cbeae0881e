"""A request that gets no answer names its real cause: a limit the learner's tree passed since
the grader's last count (processes are counted every 0.5 s, memory every 20 ms: a fork bomb
was called "an infinite loop?" when the deadline came first, or a memory hog when its copies'
memory crossed the cap first), or the learner's process stopped by its own signal. Checked on
helper processes of the test's own, as the grader sees the learner's tree."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.grader import limits
from lab.grader.isolation import LimitExceeded, Sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
THREADS = """
import sys, threading, time
for _ in range(int(sys.argv[1])):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print('ready', flush=True)
time.sleep(60)
"""


def _helper(threads: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", THREADS, str(threads)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _sandbox(tmp_path: Path, proc: subprocess.Popen[str], memory_mb: int = 1024) -> Sandbox:
    """A sandbox handle whose child is `proc` (its own session: the kill reaches it alone)."""
    box = Sandbox(solution=tmp_path / "kv_bytes.py", load={}, module_name="kv_bytes",
                  memory_mb=memory_mb, confine=False)
    box.proc, box.pid = proc, proc.pid  # type: ignore[assignment]
    return box


@pytest.fixture
def bomb() -> Iterator[subprocess.Popen[str]]:
    proc = _helper(limits.MAX_PROCESSES + 8)
    yield proc
    proc.kill()
    proc.wait()


def test_a_deadline_reached_past_the_process_limit_says_processes(
        tmp_path: Path, bomb: subprocess.Popen[str]) -> None:
    reply = _sandbox(tmp_path, bomb)._timed_out(5)
    assert reply.kind == "processes", reply
    assert reply.message.endswith(f"over the sandbox's limit of {limits.MAX_PROCESSES} (a fork "
                                  "or thread bomb?) — stopped"), reply.message
    assert bomb.wait(5) == -signal.SIGKILL


def test_a_fork_bombs_memory_is_said_as_processes(tmp_path: Path,
                                                  bomb: subprocess.Popen[str]) -> None:
    box = _sandbox(tmp_path, bomb, memory_mb=1)  # its copies' memory is over this cap
    with tempfile.TemporaryFile() as box.capture, \
            pytest.raises(LimitExceeded, match="a fork or thread bomb"):
        box._check_memory()


def test_a_process_that_stopped_itself_is_named(tmp_path: Path) -> None:
    proc = _helper(0)
    try:
        proc.send_signal(signal.SIGSTOP)  # as `os.kill(os.getpid(), SIGSTOP)` in its code
        for _ in range(100):
            if Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
                break
            time.sleep(0.01)
        reply = _sandbox(tmp_path, proc)._timed_out(5)
        assert reply.kind == "timeout"
        assert reply.message == ("no answer within 5 s: your code stopped its own process (a "
                                 "SIGSTOP or SIGTSTP it sent), so it could not answer — ended")
    finally:
        proc.kill()
        proc.wait()


def test_a_plain_hang_is_still_a_timeout(tmp_path: Path) -> None:
    proc = _helper(0)
    try:
        reply = _sandbox(tmp_path, proc)._timed_out(5)
        assert (reply.kind, reply.message) == (
            "timeout", "no answer within 5 s — an infinite loop? (stopped)")
    finally:
        proc.kill()
        proc.wait()
