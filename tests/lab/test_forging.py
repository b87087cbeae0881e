"""A learner who wants a pass without the work: every forging technique is graded as a failure
(or is harmless), the database and the app tree are untouched, and nothing is left running.

Techniques that only the namespaces stop (writes outside the workspace, detached processes with
a clean environment, sockets, /dev/shm) are skipped where this machine cannot confine.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.exercises import get, load_exercise
from lab.grader.testing import assert_fails, assert_passes, confined, grade_file
from tests.lab.conftest import HERE, ROOT, SOLUTIONS

CORRECT = (SOLUTIONS / "correct.py").read_text()
CONFINED = confined()
needs_namespaces = pytest.mark.skipif(not CONFINED, reason="no namespaces on this machine")


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture
def app_tree() -> Iterator[None]:
    """The install tree (lab/, scheduler/, trainer/) is the same after the test."""
    roots = [ROOT / "lab", ROOT / "scheduler", ROOT / "trainer"]
    before = {str(r): _tree(r) for r in roots}
    yield
    for r in roots:
        assert _tree(r) == before[str(r)], f"the sandbox changed files under {r}"


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _solution(tmp_path: Path, prelude: str, body: str = "") -> Path:
    path = tmp_path / "kv_bytes.py"
    path.write_text(prelude + "\n\n" + CORRECT + "\n\n" + body)
    return path


def _always_zero(tmp_path: Path, prelude: str) -> Path:
    return _solution(tmp_path, prelude, "def kv_bytes_per_token(config, dtype, tensor_parallel=1):"
                                        "\n    return 0\n")


# -- the judge's modules are not reachable from the child ---------------------------------------
@pytest.mark.parametrize("module", [
    "lab.exercises.kv_bytes.grading", "lab.grader.runner", "lab.grader.results",
    "lab.reference.kv_bytes", "lab.exercises.spec_verify.grading",
])
def test_patching_a_judge_module_is_refused(tmp_path: Path, module: str, app_tree: None) -> None:
    """A spec-verify forgery: replace the grading module's run/check in sys.modules."""
    path = _always_zero(tmp_path, (
        "import importlib, sys\n"
        "try:\n"
        f"    m = importlib.import_module({module!r})\n"
        "    m.run = m.check = lambda *a, **k: None\n"
        "except ImportError:\n"
        "    pass\n"
    ))
    assert_fails("kv-bytes", path, 1, match=r"off limits", kind="forbidden_import")


def test_patching_drive_or_the_sandbox_only_changes_what_the_learner_reports(
    tmp_path: Path,
) -> None:
    """The child is untrusted as a whole: rewriting its drive and its reply handler can only
    change the learner's own answers, never the verdict logic (which lives in the parent)."""
    path = _always_zero(tmp_path, (
        "import sys\n"
        "main = sys.modules['__main__']\n"
        "drive = sys.modules['lab.exercises.kv_bytes.drive']\n"
        "drive.run = lambda solution, case, ctx: {'value': 32}\n"
        "main.Child.calls = lambda self, msg: {'ok': True, 'value': {'value': 32}}\n"
    ))
    run = assert_fails("kv-bytes", path, 1, match=r"expected [\d,]+, got 32", kind="wrong")
    assert run.result.levels[0].results[0].passed  # 32 is the right answer to the first case only


def test_the_judge_files_cannot_be_read_as_text(tmp_path: Path) -> None:
    if not CONFINED:
        pytest.skip("no mount namespace: reading lab/*.py as text is not prevented here")
    grading = ROOT / "lab" / "exercises" / "kv_bytes" / "grading" / "__init__.py"
    reference = ROOT / "lab" / "reference" / "kv_bytes.py"
    path = _solution(tmp_path, (
        "seen = {}\n"
        f"for p in ({str(grading)!r}, {str(reference)!r}):\n"
        "    try:\n"
        "        seen[p] = len(open(p).read())\n"
        "    except OSError as e:\n"
        "        seen[p] = type(e).__name__\n"
        f"open({str(tmp_path / 'seen.txt')!r}, 'w').write(repr(seen))\n"
    ))
    assert_passes("kv-bytes", path, level=1)
    seen = eval((tmp_path / "seen.txt").read_text())
    # the allow-list root holds neither (under Landlock they are there but refused)
    assert set(seen.values()) <= {"FileNotFoundError", "PermissionError"}, seen


# -- the result pipe carries data only ----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("confine", [True, False])
def test_a_class_written_into_the_install_tree_cannot_come_back(
    tmp_path: Path, confine: bool, app_tree: None,
) -> None:
    """A pickle forgery: write lab/<x>.py, return an instance of its class (whose
    unpickling would have replaced `check` in the grader). A reply cannot name a class now."""
    name = f"forged_{uuid.uuid4().hex[:8]}"
    target = ROOT / "lab" / f"{name}.py"
    path = _solution(tmp_path, "", (
        "import importlib, sys\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    try:\n"
        f"        open({str(target)!r}, 'w').write('class Answer:\\n    def __eq__(s, o): "
        "return True\\n')\n"
        f"        return importlib.import_module('lab.{name}').Answer()\n"
        "    except Exception:\n"
        "        class Answer:\n"
        "            def __eq__(self, other): return True\n"
        "        return Answer()\n"
    ))
    try:
        # confined: the write fails and the object cannot be sent; unconfined the file is
        # written (only the namespaces stop that) but importing it is refused
        assert_fails("kv-bytes", path, 1, confine=confine,
                     match=r"cannot be sent back to the grader: result\[.value.\] is a "
                           r".*Answer object" if confine else r"lab\.forged_\w+ .* off limits")
    finally:
        if target.exists():  # only possible without namespaces
            assert not confine
            target.unlink()


@pytest.mark.slow
def test_a_forged_frame_on_the_result_pipe_is_a_protocol_failure(tmp_path: Path) -> None:
    path = _solution(tmp_path, "", (
        "import os, struct, sys\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    fd = int(sys.argv[sys.argv.index('--wfd') + 1])\n"
        "    junk = b'\\x80\\x04cos\\nsystem\\n'  # a pickle, which nobody unpickles any more\n"
        "    os.write(fd, struct.pack('!Q', len(junk)) + junk)\n"
        "    return 0\n"
    ))
    assert_fails("kv-bytes", path, 1, match=r"garbage on its result pipe", kind="protocol")


def test_a_lying_int_subclass_cannot_be_sent(tmp_path: Path) -> None:
    path = _solution(tmp_path, "", (
        "class Liar(int):\n"
        "    def __eq__(self, other): return True\n"
        "    __hash__ = int.__hash__\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    return Liar(7)\n"
    ))
    assert_fails("kv-bytes", path, 1, match=r"result\['value'\] is a kv_bytes.Liar object",
                 kind="unsendable")


# -- timing is the grader's stopwatch -----------------------------------------------------------
TIMED = load_exercise(HERE / "fixtures" / "timed_demo", module="tests.lab.fixtures.timed_demo")


@pytest.mark.slow
def test_patching_the_childs_clock_does_not_make_slow_code_fast(tmp_path: Path) -> None:
    """A timing forgery: replace time_calls / perf_counter in the child."""
    path = tmp_path / "timed_demo.py"
    path.write_text(
        "import sys, time\n"
        "for m in list(sys.modules.values()):\n"
        "    if hasattr(m, 'time_calls'):\n"
        "        m.time_calls = lambda fn, device, repeats: [1e-5] * repeats\n"
        "time.perf_counter = lambda: 0.0\n"
        "def square_sum(a):\n"
        "    time.sleep(0.05)\n"
        "    return (a @ a).sum()\n"
    )
    assert_fails(TIMED, path, 1, match=r"too slow for this level", kind="gate", timing_repeats=3)


@pytest.mark.slow
def test_skipping_the_work_while_timed_is_caught(tmp_path: Path) -> None:
    """A child that answers timing batches from a cache (without running the code) fails: every
    timed call has its own inputs and every output is checked."""
    path = tmp_path / "timed_demo.py"
    path.write_text(
        "import sys, time\n"
        "main = sys.modules['__main__']\n"
        "real = main.Child.calls\n"
        "cache = {}\n"
        "def fast(self, msg):\n"
        "    if msg['op'] != 'batch':\n"
        "        return real(self, msg)\n"
        "    if 'v' not in cache:\n"
        "        cache['v'] = real(self, {**msg, 'seeds': msg['seeds'][:1]})['values'][0]\n"
        "    return {'ok': True, 'values': [cache['v']] * len(msg['seeds'])}\n"
        "main.Child.calls = fast\n"
        "def square_sum(a):\n"
        "    time.sleep(0.05)\n"
        "    return (a @ a).sum()\n"
    )
    assert_fails(TIMED, path, 1, match=r"while timing \(a run with seed \d+\)", kind="wrong",
                 timing_repeats=3)


@pytest.mark.slow
def test_a_checked_call_and_a_timed_call_have_the_same_callers(tmp_path: Path) -> None:
    """A solution that looks at its callers to tell the graded call from a timed one (to be
    right when checked and fast when timed) sees the same stack either way."""
    log = tmp_path / "stacks.txt"
    path = tmp_path / "timed_demo.py"
    path.write_text(
        "import sys\n"
        "def square_sum(a):\n"
        "    names, frame = [], sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        names.append(frame.f_code.co_name)\n"
        "        frame = frame.f_back\n"
        f"    open({str(log)!r}, 'a').write(' '.join(names) + '\\n')\n"
        "    return (a @ a).sum()\n"
    )
    run = grade_file(TIMED, path, 1, timing_repeats=2)
    assert run.result.passed, run.describe()
    stacks = log.read_text().splitlines()
    assert len(stacks) > 2  # the graded call and the timed ones
    assert len(set(stacks)) == 1, set(stacks)


# -- the sandbox cannot reach the learner's records, the network or outlive the run -------------
@pytest.mark.slow
@needs_namespaces
def test_the_database_and_state_json_cannot_be_written(
    tmp_path: Path, dojo_home: Path, app_tree: None,
) -> None:
    from scheduler.store import Store

    with Store.open():
        pass  # create the database, as a learner's install has one
    state = dojo_home / "lab" / "kv-bytes" / "state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text('{"hints_shown": 1}')
    db = dojo_home / "dojo.sqlite3"
    path = _always_zero(tmp_path, (
        "import sqlite3, json\n"
        "errors = []\n"
        "try:\n"
        f"    c = sqlite3.connect({str(db)!r})\n"
        "    c.execute(\"INSERT INTO lab_attempts (uid, exercise, level, device, passed, cases, "
        "metrics, duration_s, created_ms) VALUES ('x', 'kv-bytes', 1, 'cpu', 1, '[]', '{}', 1, "
        "1)\")\n"
        "    c.commit()\n"
        "except Exception as e:\n"
        "    errors.append(type(e).__name__)\n"
        "try:\n"
        f"    open({str(state)!r}, 'w').write(json.dumps({{'levels': {{'1': "
        "{'passed': True}}}))\n"
        "except Exception as e:\n"
        "    errors.append(type(e).__name__)\n"
        f"open({str(tmp_path / 'errors.txt')!r}, 'w').write(repr(errors))\n"
    ))
    from trainer.core.lab import Lab

    with Lab.open() as lab:
        result = lab.grade(get("kv-bytes"), path, [1], "cpu", 1, None, record=True).result
    summary = result.events[-1]
    assert not result.passed and getattr(summary, "stored", False)
    assert len(eval((tmp_path / "errors.txt").read_text())) == 2
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT level, passed FROM lab_attempts").fetchall()
    assert rows == [(1, 0)]  # only the grader's own row: the failure
    assert state.read_text() == '{"hints_shown": 1}'


@pytest.mark.slow
@needs_namespaces
def test_a_detached_process_with_a_clean_environment_does_not_outlive_grading(
    tmp_path: Path, dojo_home: Path,
) -> None:
    marker = f"dojo-forger-{uuid.uuid4().hex}"
    late = dojo_home / "late.txt"
    code = f"import time; time.sleep(3); open({str(late)!r}, 'w').write('x')"
    path = _solution(tmp_path, (
        "import os, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execve(sys.executable, [sys.executable, '-c', {code!r}, {marker!r}], {{}})\n"
        "    os._exit(0)\n"
    ))
    assert_passes("kv-bytes", path, level=1)
    deadline = time.monotonic() + 3
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(marker) == [], "a detached process outlived grading"
    time.sleep(3.5)
    assert not late.exists()


@pytest.mark.slow
@needs_namespaces
def test_no_network_from_the_sandbox(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    path = _always_zero(tmp_path, (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'answers?')\n"
        "    result = 'connected'\n"
        "except OSError as e:\n"
        "    result = type(e).__name__\n"
        f"open({str(tmp_path / 'net.txt')!r}, 'w').write(result)\n"
    ))
    assert_fails("kv-bytes", path, 1, match=r"expected 32, got 0", kind="wrong")
    assert (tmp_path / "net.txt").read_text() != "connected"
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


@pytest.mark.slow
@needs_namespaces
def test_dev_shm_is_private_and_capped(tmp_path: Path) -> None:
    name = f"dojo-shm-{uuid.uuid4().hex}"
    path = _solution(tmp_path, (
        "written = 0\n"
        "try:\n"
        f"    with open('/dev/shm/{name}', 'wb') as f:\n"
        "        for _ in range(3 * 1024):\n"
        "            f.write(b'x' * (1 << 20))\n"
        "            written += 1\n"
        "except OSError:\n"
        "    pass\n"
        f"open({str(tmp_path / 'shm.txt')!r}, 'w').write(str(written))\n"
    ))
    assert_passes("kv-bytes", path, level=1)
    assert int((tmp_path / "shm.txt").read_text()) < 1024  # MiB: capped well below 3 GiB
    assert not os.path.exists(f"/dev/shm/{name}")  # and gone with the sandbox


@pytest.mark.slow
def test_a_correct_solution_still_passes_confined_and_not() -> None:
    for confine in (True, False):
        run = grade_file("kv-bytes", SOLUTIONS / "correct.py", confine=confine)
        assert run.result.passed, run.describe()
        notices = [e["message"] for e in run.events if e["event"] == "notice"]
        # one line naming the confinement that ran, not one per child
        if confine and CONFINED:
            assert notices == ["sandbox: namespaces + seccomp"], notices
        elif not confine:
            assert notices == ["sandbox: unconfined, at your request"], notices
