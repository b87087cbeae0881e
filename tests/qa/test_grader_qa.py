"""The kv-bytes grader against solutions a learner (or a mischievous one) really writes."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, grade_file
from tests.lab.conftest import SOLUTIONS

CORRECT = (SOLUTIONS / "correct.py").read_text()


def solution(tmp_path: Path, extra: str, name: str = "kv_bytes.py") -> Path:
    """The correct solution with `extra` appended (it may wrap or replace functions)."""
    path = tmp_path / name
    path.write_text(CORRECT + "\n\n" + extra)
    return path


def test_a_huge_int_result_fails_the_case_without_crashing_the_grader(tmp_path: Path) -> None:
    """10**5000 used to crash the whole run (OverflowError in the ratio, then the int-to-str
    digit limit in the fallback message)."""
    path = solution(tmp_path, "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                              "    return 10 ** 5000\n")
    run = assert_fails("kv-bytes", path, 1, match=r"kv_bytes_per_token: expected 32, got ",
                       kind="wrong")
    assert all(len(f["got"]) < 1000 for f in run.failures)


def _wait_dead(pid: int, timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reaped by us? (only if it were our child; it is not)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("escape", ["", "os.setsid()\n    "])
def test_no_process_the_learner_forked_survives_grading(tmp_path: Path, escape: str) -> None:
    """A forked child (even one that starts its own session) is killed when grading ends."""
    pidfile = tmp_path / "orphan.pid"
    path = solution(tmp_path, (
        "import os, time\n"
        "if os.fork() == 0:\n"
        f"    {escape}open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
    ))
    # confine=False: the process-group and token kills (the fallback without a PID namespace,
    # where the pid is ours to see); tests/lab/test_forging.py covers the namespace
    assert_passes("kv-bytes", path, level=1, confine=False)
    pid = int(pidfile.read_text())
    try:
        assert _wait_dead(pid), f"the learner's forked process {pid} outlived grading"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside the sandbox, in its own group (so a wrongly allowed killpg spares us)."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize(
    ("call", "target"),
    [
        ("os.kill({pid}, signal.SIGKILL)", "process {pid}"),
        ("os.killpg({pid}, signal.SIGKILL)", "process group {pid}"),
        ("ctypes.CDLL(None).kill({pid}, signal.SIGKILL)", "anything through ctypes"),
        ("os.kill(os.getppid(), 0)", "process {ppid}"),
        ("os.kill(-1, 0)", "every process"),
    ],
)
@pytest.mark.slow
def test_the_learners_code_cannot_signal_processes_outside_its_sandbox(
    tmp_path: Path, victim: subprocess.Popen[bytes], call: str, target: str
) -> None:
    """The grader (and the app it runs in) and other processes stay up; the learner is told."""
    path = solution(tmp_path, (
        "import ctypes, os, signal\n"
        "_orig = kv_bytes_per_token\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        f"    {call.format(pid=victim.pid)}\n"
        "    return _orig(config, dtype, tensor_parallel)\n"
    ))
    want = target.format(pid=victim.pid, ppid=os.getpid())
    assert_fails("kv-bytes", path, 1, kind="exception", confine=False,  # the audit hook itself
                 match=r"SignalRefused \(kv_bytes.py:\d+, in kv_bytes_per_token\): "
                 + re.escape(f"the sandbox refuses to signal {want}"))
    assert victim.poll() is None


@pytest.mark.slow
@pytest.mark.parametrize("escape", ["", "os.setsid()\n        "])
def test_the_learner_may_signal_what_it_started(tmp_path: Path, escape: str) -> None:
    path = solution(tmp_path, (
        "import os, signal, time\n"
        "_orig = kv_bytes_per_token\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    os.kill(os.getpid(), 0)\n"
        "    os.killpg(0, 0)\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        f"        {escape}time.sleep(30)\n"
        "        os._exit(0)\n"
        "    time.sleep(0.05)\n"
        "    os.kill(pid, signal.SIGKILL)\n"
        "    os.waitpid(pid, 0)\n"
        "    return _orig(config, dtype, tensor_parallel)\n"
    ))
    assert_passes("kv-bytes", path, level=1)


def test_a_result_of_the_learners_own_type_gets_a_clear_message(tmp_path: Path) -> None:
    """An int subclass defined in the solution used to be reported as 'garbage on the result
    pipe' and stop the run; it is a wrong-type result, and the other cases still run."""
    path = solution(tmp_path, (
        "class Bytes(int):\n"
        "    pass\n"
        "_orig = kv_bytes_per_token\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    return Bytes(_orig(config, dtype, tensor_parallel))\n"
    ))
    run = grade_file("kv-bytes", path, 1)
    assert not run.result.passed
    kinds = {f["kind"] for f in run.failures}
    assert "protocol" not in kinds and "skipped" not in kinds, run.describe()
    assert any("plain Python values" in f["message"] and "Bytes" in f["message"]
               for f in run.failures), run.describe()


@pytest.mark.slow
def test_a_crafted_pickle_cannot_run_code_in_the_grader(tmp_path: Path) -> None:
    """The result crosses a pipe as a pickle; one that calls eval() on loading must not run
    in the grader's process (it could compute or fake anything there)."""
    marker = tmp_path / "pwned"
    path = solution(tmp_path, (
        "class Evil:\n"
        "    def __reduce__(self):\n"
        f"        return (eval, (\"open({str(marker)!r}, 'w').write('x') or 32\",))\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    return Evil()\n"
    ))
    run = grade_file("kv-bytes", path, 1)
    assert not run.result.passed
    assert all(f["kind"] != "exception" or "load" not in f["message"] for f in run.failures)
    assert not marker.exists(), "the learner's pickle ran eval() in the grader"


def test_a_syntax_error_points_at_the_learners_line_not_importlib(tmp_path: Path) -> None:
    """The message and traceback used to name '<frozen importlib._bootstrap>:241' (a frozen
    frame's relative 'path' resolved into the learner's folder and passed as theirs)."""
    path = solution(tmp_path, "def broken(:\n    pass\n")
    line = len((CORRECT + "\n\n").splitlines()) + 1
    run = grade_file("kv-bytes", path, 1)
    failure = run.failures[0]
    assert f"kv_bytes.py:{line}" in failure["message"], failure["message"]
    assert "frozen" not in failure["message"] + failure["traceback"], failure
    assert f'line {line}' in failure["traceback"] and "def broken(:" in failure["traceback"]


def test_an_error_at_import_time_points_at_the_learners_line(tmp_path: Path) -> None:
    path = solution(tmp_path, "x = undefined_name\n")
    line = len((CORRECT + "\n\n").splitlines()) + 1
    run = grade_file("kv-bytes", path, 1)
    failure = run.failures[0]
    assert f"NameError (kv_bytes.py:{line}, in <module>)" in failure["message"], failure
    assert "frozen" not in failure["traceback"], failure["traceback"]
