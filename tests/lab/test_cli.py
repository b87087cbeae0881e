"""The whole lab loop from the real `dojo` command (subprocesses, real files, real sandbox)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab.conftest import BROKEN, ROOT, SOLUTIONS, default_signals, save


def dojo(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "trainer", "lab", *args], cwd=ROOT, env=env, input=input,
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.slow
def test_start_grade_hint_reset_loop(dojo_home: Path) -> None:
    listed = dojo("list")
    assert listed.returncode == 0
    assert "kv-bytes" in listed.stdout and "not started" in listed.stdout

    started = dojo("start", "kv-bytes")
    assert started.returncode == 0
    path = Path(started.stdout.strip().splitlines()[-1])
    assert path == dojo_home / "lab" / "kv-bytes" / "kv_bytes.py"
    assert "raise NotImplementedError" in path.read_text()

    failing = dojo("grade", "kv-bytes", "--seed", "11")
    assert failing.returncode == 1, failing.stderr
    out = failing.stdout
    assert "device: cpu" in out and "seed 11" in out
    assert "✗ Level 1 · Bytes per token: FAILED" in out
    assert "smallest failing case: tiny-one-layer [not_implemented]" in out
    assert "not implemented yet (kv_bytes.py:" in out
    assert "replay:   dojo lab grade kv-bytes --seed 11" in out
    assert "failing" in dojo("list").stdout

    # the learner's work is never overwritten by a second start
    shutil.copyfile(SOLUTIONS / "correct.py", path)
    again = dojo("start", "kv-bytes")
    assert "already started" in again.stdout
    assert path.read_text() == (SOLUTIONS / "correct.py").read_text()

    passing = dojo("grade", "kv-bytes")
    assert passing.returncode == 0, passing.stdout
    assert "✓ Level 1 · Bytes per token: PASSED" in passing.stdout
    assert "✓ Level 2 · Capacity planning: PASSED" in passing.stdout
    assert "passing" in dojo("list").stdout

    first, second = dojo("hint", "kv-bytes"), dojo("hint", "kv-bytes")
    assert "Hint 1/" in first.stdout and "Hint 2/" in second.stdout
    assert first.stdout != second.stdout
    for _ in range(10):  # the hints run out within ten more asks, and stay out
        last = dojo("hint", "kv-bytes")
        if "No more hints" in last.stdout:
            break
    assert "No more hints" in last.stdout
    assert "No more hints" in dojo("hint", "kv-bytes").stdout

    refused = dojo("reset", "kv-bytes", input="n\n")
    assert refused.returncode == 1 and "Nothing changed" in refused.stdout
    assert path.read_text() == (SOLUTIONS / "correct.py").read_text()
    reset = dojo("reset", "kv-bytes", "--yes")
    assert reset.returncode == 0
    backups = list((dojo_home / "lab" / "kv-bytes" / "backups").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == (SOLUTIONS / "correct.py").read_text()
    assert str(backups[0]) in reset.stdout
    assert "raise NotImplementedError" in path.read_text()


@pytest.mark.slow
def test_workspace_option_is_remembered(tmp_path: Path) -> None:
    started = dojo("start", "kv-bytes", "--workspace", str(tmp_path / "ws"))
    path = tmp_path / "ws" / "kv_bytes.py"
    assert started.returncode == 0 and path.is_file()
    shutil.copyfile(BROKEN / "no_factor_two.py", path)
    shutil.copyfile(BROKEN / "_kvbase.py", path.parent / "_kvbase.py")
    graded = dojo("grade", "kv-bytes", "--level", "1", "--seed", "3")
    assert graded.returncode == 1
    assert str(path) in graded.stdout
    assert "the cache stores both (factor 2)" in graded.stdout
    assert "expected: {'value': 32}" in graded.stdout and "got:      {'value': 16}" in graded.stdout


@pytest.mark.slow
def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert dojo("grade", "nope").returncode == 2
    no_file = dojo("grade", "kv-bytes")
    assert no_file.returncode == 2 and "dojo lab start kv-bytes" in no_file.stderr
    bad_level = dojo("grade", "kv-bytes", "--file", str(SOLUTIONS / "correct.py"), "--level", "9")
    assert bad_level.returncode == 2 and "no level 9" in bad_level.stderr
    assert dojo("grade", "kv-bytes", "--device", "tpu").returncode == 2
    assert dojo("show", "nope").returncode == 2


@pytest.mark.slow
def test_show_prints_the_statement() -> None:
    shown = dojo("show", "kv-bytes")
    assert shown.returncode == 0 and "Packing rule" in shown.stdout


@pytest.mark.slow
def test_json_stream_is_one_event_per_line_even_with_garbage_output() -> None:
    graded = dojo("grade", "kv-bytes", "--level", "1", "--seed", "5", "--json",
                  "--file", str(SOLUTIONS / "prints_garbage.py"))
    assert graded.returncode == 0
    events = [json.loads(line) for line in graded.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "summary"
    assert kinds[-2] == "level_summary"
    assert kinds.count("case_started") == kinds.count("case_passed") + kinds.count("case_failed")
    assert events[0]["device"] == "cpu" and events[0]["seed"] == 5
    assert events[-1]["passed"] is True and events[-1]["levels"] == {"1": True}
    assert all("noise on stderr" in e["output"] for e in events if e["event"] == "case_passed")


@pytest.mark.slow
def test_json_failure_events_carry_the_replay_data() -> None:
    graded = dojo("grade", "kv-bytes", "--level", "1", "--seed", "8", "--json",
                  "--file", str(SOLUTIONS / "calls_sys_exit.py"))
    assert graded.returncode == 1
    events = [json.loads(line) for line in graded.stdout.splitlines()]
    failed = [e for e in events if e["event"] == "case_failed"]
    assert failed and all(e["kind"] == "exit" and e["seed"] == 8 for e in failed)
    assert all(e["replay"] == "dojo lab grade kv-bytes --level 1 --seed 8" for e in failed)
    assert {"params", "expected", "got", "message", "traceback", "output"} <= set(failed[0])


@pytest.mark.slow
def test_watch_regrades_on_save_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                        "    return 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainer", "lab", "watch", "kv-bytes", "--level", "1",
         "--file", str(solution), "--json", "--interval", "0.1"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_signals(),  # Ctrl-C reaches it even from a background test run
    )
    assert proc.stdout is not None
    try:
        summaries = []
        deadline = time.monotonic() + 90
        while len(summaries) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            if event["event"] == "summary":
                summaries.append(event)
                if len(summaries) == 1:
                    time.sleep(0.05)  # make sure the mtime moves
                    save(solution, (SOLUTIONS / "correct.py").read_text())
        assert [s["passed"] for s in summaries] == [False, True]
        proc.send_signal(signal.SIGINT)
        # a bound, not a timing: the exit ends the child being prepared for the next save, whose
        # start (a torch import) took over 20 s at load 13 on 2 cores
        assert proc.wait(timeout=90) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_watch_stops_on_a_ctrl_c_that_library_code_swallowed(tmp_path: Path) -> None:
    """A SIGINT landing in torch's pybind11 code was lost there (the KeyboardInterrupt never
    reached the watch, which went on watching): here a grading swallows one on purpose."""
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                        "    return 0\n")
    code = (
        "import os, signal, sys, time\n"
        "import trainer.commands.lab as cli\n"
        "real = cli._grade_once\n"
        "def swallowing(*args, **kwargs):\n"
        "    passed = real(*args, **kwargs)\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(30)\n"
        "    except KeyboardInterrupt:\n"
        "        print('swallowed', flush=True)\n"
        "    return passed\n"
        "cli._grade_once = swallowing\n"
        "from trainer.launch import main\n"
        f"sys.argv = ['dojo', 'lab', 'watch', 'kv-bytes', '--level', '1', '--file', "
        f"{str(solution)!r}, '--json', '--interval', '0.1']\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, preexec_fn=default_signals())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "swallowed", lines  # one grading, then stopped: no second one
    assert sum(json.loads(line)["event"] == "summary" for line in lines[:-1]) == 1


@pytest.mark.slow
def test_kv_bytes_never_loads_torch_in_the_grader_or_the_sandbox(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(
        "import sys\n"
        "from correct import kv_bytes_per_token as _right\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    assert 'torch' not in sys.modules, 'torch was imported in the sandbox'\n"
        "    return _right(config, dtype, tensor_parallel)\n"
    )
    shutil.copyfile(SOLUTIONS / "correct.py", tmp_path / "correct.py")
    code = (
        "import sys\nfrom pathlib import Path\nfrom lab.exercises import get\n"
        "from lab.grader.runner import GradeOptions, grade\n"
        f"r = grade(get('kv-bytes'), Path({str(solution)!r}),\n"
        "          GradeOptions(levels=[1], seed=1))\n"
        "assert r.passed, [x.message for lvl in r.levels for x in lvl.results if not x.passed]\n"
        "assert 'torch' not in sys.modules, 'torch was imported by the grader'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_watch_with_a_bad_level_exits_2_at_once() -> None:
    watched = dojo("watch", "kv-bytes", "--file", str(SOLUTIONS / "correct.py"), "--level", "7")
    assert watched.returncode == 2 and "no level 7" in watched.stderr


@pytest.mark.slow
def test_serve_grades_one_request_a_line_and_says_when_each_is_done(dojo_home: Path) -> None:
    """The TUI's grading server: JSON events per request, closed by {"event": "served", "rc"}
    with `dojo lab grade`'s exit status; a bad request is answered 2 and the server goes on."""
    assert dojo("start", "kv-bytes").returncode == 0
    requests = [{"exercise": "kv-bytes", "level": 1}, {"exercise": "nope"}, "not json",
                {"exercise": "kv-bytes", "level": "1"}, {"exercise": "kv-bytes", "level": 1}]
    lines = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    served = dojo("serve", input=lines)
    assert served.returncode == 0, served.stderr  # its input ended: it stops
    events = [json.loads(line) for line in served.stdout.splitlines() if line.startswith("{")]
    rcs = [e["rc"] for e in events if e["event"] == "served"]
    assert rcs == [1, 2, 2, 2, 1]  # the stub fails; three bad requests; the stub again
    assert sum(e["event"] == "summary" for e in events) == 2
    assert "unknown exercise 'nope'" in served.stderr
    assert served.stderr.count("not a grade request") == 2


@pytest.mark.slow
def test_serve_prepares_a_started_torch_lab_ahead_of_its_grading(dojo_home: Path) -> None:
    """{"prepare": true} (the TUI sends it when a started lab is selected) warms the child the
    next grading adopts and says when it is ready; a lab not started, or one without torch,
    prepares nothing and prints no error into the screen's log."""
    assert dojo("start", "spec-verify", "--level", "1").returncode == 0
    assert dojo("start", "kv-bytes").returncode == 0
    requests = [{"exercise": "batch-engine", "level": 1, "prepare": True},  # not started
                {"exercise": "kv-bytes", "level": 1, "prepare": True},  # pure Python
                {"exercise": "spec-verify", "level": 1, "prepare": True},
                {"exercise": "spec-verify", "level": 1, "prepare": True},  # the same: kept
                {"exercise": "spec-verify", "level": 1}]
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    served = dojo("serve", input=lines)
    assert served.returncode == 0, served.stderr
    assert "Error" not in served.stderr
    events = [json.loads(line) for line in served.stdout.splitlines() if line.startswith("{")]
    ready = [e["ready"] for e in events if e["event"] == "prepared"]
    assert ready == [False, False, True, True]
    assert [e["kept"] for e in events if e["event"] == "prepared"] == [False, False, False, True]
    failed = [e for e in events if e["event"] == "case_failed"]
    assert failed and failed[0]["kind"] == "not_implemented"
    assert [e["rc"] for e in events if e["event"] == "served"] == [1]
