"""A hostile learner file against the confinement itself: each technique that got a
pass or changed something outside the sandbox now fails *because the sandbox refused it* (EPERM,
a read-only or absent path), not because something crashed.

Graded as a real learner would be: when the tests run as root, the grading runs in a subprocess
as `nobody`, with a workspace and a data dir that user owns.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.grader import confine
from lab.grader.testing import confined
from tests.lab.conftest import ROOT, SOLUTIONS

CORRECT = (SOLUTIONS / "correct.py").read_text()
CONFINED = confined()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CONFINED, reason="no namespaces on this machine")]
NOBODY = 65534
AS_NOBODY = os.getuid() == 0


@pytest.fixture
def learner_dir() -> Iterator[Path]:
    """A folder the learner's user owns (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="dojo-learner-"))
    (folder / "ws").mkdir()
    (folder / "home").mkdir()
    if AS_NOBODY:
        for path in (folder, folder / "ws", folder / "home"):
            os.chown(path, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _deny_user_namespaces() -> None:
    """preexec_fn: enter a user namespace of our own whose descendants may create none
    (user.max_user_namespaces = 0 there, which limits only this process tree): the grading then
    meets a system that denies user namespaces. As root, every id stays mapped (a helper left
    in the parent namespace writes the maps), so `nobody` still exists."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid, me = os.getuid(), os.getgid(), os.getpid()
    ready_r, ready_w = os.pipe()
    helper = os.fork()
    if helper == 0:  # stays in the parent namespace, where it may write any map
        os.read(ready_r, 1)
        ids = ("0 0 65536", "0 0 65536") if uid == 0 else (f"{uid} {uid} 1", f"{gid} {gid} 1")
        if uid != 0:
            with open(f"/proc/{me}/setgroups", "w") as f:
                f.write("deny")
        for name, line in zip(("uid_map", "gid_map"), ids, strict=True):
            with open(f"/proc/{me}/{name}", "w") as f:
                f.write(line)
        os._exit(0)
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
    os.write(ready_w, b"x")
    _, status = os.waitpid(helper, 0)
    if status != 0:
        raise OSError("could not map the ids")
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")


def _as_nobody() -> None:
    """preexec_fn: become `nobody`. The interpreter may sit under a folder only root can
    enter (/root/.pyenv): in a private mount namespace that folder is covered by a tmpfs and
    only the Python installation is bound back (from a descriptor opened before the cover), so
    `nobody` can run it; nothing outside this process changes."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(rc: int) -> None:
        if rc != 0:
            raise OSError(ctypes.get_errno(), "as nobody")

    check(libc.unshare(0x00020000))  # CLONE_NEWNS
    check(libc.mount(None, b"/", None, ctypes.c_ulong((1 << 18) | 16384), None))  # rprivate
    for folder, keep in _CLOSED:
        fds = [(k, os.open(k, os.O_PATH)) for k in keep]
        check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", ctypes.c_ulong(0), b"mode=755"))
        for path, fd in fds:
            os.makedirs(path, exist_ok=True)
            check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None,
                             ctypes.c_ulong(4096 | 16384), None))  # rbind
            os.close(fd)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _closed_folders() -> list[tuple[str, list[str]]]:
    installs = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}
    out = []
    for install in installs:
        for folder in Path(install).parents:
            if not folder.stat().st_mode & 0o001:
                out.append((str(folder), sorted(installs)))
    return out


_CLOSED = _closed_folders()
GRADE = """
import json, sys
from pathlib import Path
from lab.grader.testing import grade_file
run = grade_file(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
print(json.dumps({"passed": run.result.passed, "events": run.events}))
"""


def _preexec(deny_userns: bool, as_nobody: bool = AS_NOBODY) -> Any:
    if not deny_userns:
        return _as_nobody if as_nobody else None

    def both() -> None:
        _deny_user_namespaces()
        if as_nobody:
            _as_nobody()

    return both


def run_as_learner(folder: Path, script: str, *args: str, deny_userns: bool = False,
                   as_nobody: bool = AS_NOBODY) -> Any:
    """Run `script` (Python; it prints one JSON line last) as the learner's user, with the data
    dir in `folder` (`deny_userns`: on a system that denies user namespaces); returns what it
    printed."""
    env = {**os.environ, "DOJO_HOME": str(folder / "home"), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(folder / "home")}
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                         env=env, timeout=300, check=False, cwd=str(folder / "ws"),
                         preexec_fn=_preexec(deny_userns, as_nobody))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _owned(path: Path) -> Path:
    if AS_NOBODY:
        os.chown(path, NOBODY, NOBODY)
    return path


def grade_as_learner(folder: Path, probe: str, exercise: str = "kv-bytes",
                     level: int = 1, body: str = CORRECT,
                     ws: Path | None = None, deny_userns: bool = False,
                     as_nobody: bool = AS_NOBODY) -> tuple[dict[str, Any], Any]:
    """Grade a kv-bytes file whose import runs `probe` (which fills the dict `seen`) as the
    learner's user, in `ws` (default: folder/ws); returns (the grading's JSON, what the probe
    saw)."""
    ws = ws or folder / "ws"
    solution = ws / "kv_bytes.py"
    solution.write_text(
        "import ctypes, errno, json, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "seen = {}\n"
        "def err(rc):\n"
        "    return 'ok' if rc == 0 else errno.errorcode[ctypes.get_errno()]\n"
        "def oserr(fn, *a):\n"
        "    try:\n"
        "        fn(*a)\n"
        "        return 'ok'\n"
        "    except OSError as e:\n"
        "        return errno.errorcode.get(e.errno, str(e.errno))\n"
        + probe +
        f"\nopen({str(ws / 'seen.json')!r}, 'w').write(json.dumps(seen))\n\n" + body)
    _owned(solution)
    result = run_as_learner(folder, GRADE, exercise, str(solution), str(level),
                            deny_userns=deny_userns, as_nobody=as_nobody)
    seen_file = ws / "seen.json"
    assert seen_file.exists(), json.dumps(result["events"])[-3000:]
    return result, json.loads(seen_file.read_text())


# -- 1. the confinement cannot be undone from inside ------------------------------------------
def test_the_mounts_cannot_be_undone_and_no_capability_is_left(learner_dir: Path) -> None:
    reference = ROOT / "lab" / "reference"
    probe = (
        f"seen['umount'] = err(libc.umount2({str(reference).encode()!r}, 2))\n"
        "seen['remount_rw'] = err(libc.mount(None, b'/', None, ctypes.c_ulong(32 | 4096), "
        "None))\n"
        "seen['shm_over'] = err(libc.umount2(b'/dev/shm', 2))\n"
        "seen['unshare'] = err(libc.unshare(0x10000000 | 0x20000))\n"
        "seen['chroot'] = err(libc.chroot(b'/'))\n"
        "seen['setns'] = err(libc.setns(0, 0))\n"  # EBADF were it allowed
        "seen['personality'] = err(-1 if libc.personality(0x0040000) == -1 else 0)\n"
        "status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
        "seen['caps'] = {k: status[k].strip() for k in ('CapEff', 'CapPrm', 'CapBnd', 'CapInh',"
        " 'CapAmb', 'NoNewPrivs', 'Seccomp')}\n"
        f"seen['site'] = oserr(open, {str(ROOT / 'lab' / 'sitecustomize.py')!r}, 'w')\n"
    )
    result, seen = grade_as_learner(learner_dir, probe)
    assert result["passed"]
    if confine._seccomp_filter() is not None:
        assert seen["umount"] == seen["remount_rw"] == seen["shm_over"] == "EPERM", seen
        assert seen["unshare"] == seen["chroot"] == "EPERM"
        assert seen["setns"] == seen["personality"] == "EPERM"
        assert seen["caps"]["Seccomp"] == "2"
    assert seen["caps"]["CapEff"] == seen["caps"]["CapPrm"] == seen["caps"]["CapBnd"] \
        == "0000000000000000"
    assert seen["caps"]["NoNewPrivs"] == "1"
    assert seen["site"] == "EROFS"  # the app tree is a read-only mount, whoever owns it
    assert not (ROOT / "lab" / "sitecustomize.py").exists()


def test_no_terminal_is_reachable(learner_dir: Path) -> None:
    probe = (
        "seen['pts'] = os.path.exists('/dev/pts')\n"
        "try:\n"
        "    with open('/dev/ptmx', 'rb') as f:\n"
        "        seen['ptmx'] = 'a terminal' if os.isatty(f.fileno()) else 'not a terminal'\n"
        "except OSError as e:\n"
        "    seen['ptmx'] = errno.errorcode[e.errno]\n"
        "seen['tty'] = oserr(open, '/dev/tty', 'rb')\n"
        "seen['isatty'] = [os.isatty(fd) for fd in (0, 1, 2)]\n"
        "seen['session_leader'] = os.getsid(0) == os.getpid()\n"
    )
    _, seen = grade_as_learner(learner_dir, probe)
    assert seen["pts"] is False  # the allow-list /dev has no terminals
    assert seen["ptmx"] != "a terminal" and seen["tty"] in ("ENXIO", "ENOENT")  # none at all
    assert seen["isatty"] == [False, False, False]


def test_a_failing_confinement_step_is_an_error_not_a_weaker_sandbox(tmp_path: Path) -> None:
    """Any step that fails stops the grading (here: a link planted over a bound folder)."""
    from lab.grader.root import RootSpec

    spec = RootSpec(read=["/usr"], write=[str(tmp_path)], links=[("/usr", "elsewhere")])
    out = subprocess.run([sys.executable, "-m", "lab.grader.confine", str(tmp_path),
                          spec.to_json()],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 3, out.stdout + out.stderr
    assert "building the allow-list root" in json.loads(out.stdout.splitlines()[-1])["error"]


# -- 2. no helper the learner can reach holds more than the learner's rights -------------------
def test_the_outer_process_is_out_of_reach(learner_dir: Path) -> None:
    probe = (
        "seen['pid'], seen['ppid'] = os.getpid(), os.getppid()\n"
        "seen['procs'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "import time\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "seen['ptrace'] = err(libc.ptrace(16, child, None, None))\n"  # PTRACE_ATTACH
        "iov = (ctypes.c_char * 8)()\n"
        "vec = (ctypes.c_void_p * 2)(ctypes.addressof(iov), 8)\n"
        "rc = libc.process_vm_writev(child, vec, 1, vec, 1, 0)\n"
        "seen['vm_write'] = err(0 if rc >= 0 else -1)\n"
        "os.kill(child, 9)\n"
        "os.waitpid(child, 0)\n"
    )
    result, seen = grade_as_learner(learner_dir, probe)
    assert result["passed"]
    # the code is its PID namespace's init; the waiter outside is not even a pid here
    assert seen["pid"] == 1 and seen["ppid"] == 0
    assert seen["procs"] == [1]
    if confine._seccomp_filter() is not None:
        assert seen["ptrace"] == seen["vm_write"] == "EPERM"


def test_the_waiter_holds_no_capability_and_cannot_be_dumped() -> None:
    """The process outside the PID namespace (read here, from the grader's side)."""
    from lab.exercises import get
    from lab.grader.spawn import learner_sandbox, reference_guess, sandbox_options

    ex = get("kv-bytes")
    _, box = learner_sandbox(ex, SOLUTIONS / "correct.py", reference_guess(ex),
                             sandbox_options(ex, "cpu", 512, None, True))
    try:
        assert box.start().ok
        assert box.proc is not None and box.pid != box.proc.pid
        status = dict(line.split(":", 1) for line in
                      Path(f"/proc/{box.proc.pid}/status").read_text().splitlines())
        assert status["CapEff"].strip() == status["CapBnd"].strip() == "0000000000000000"
        assert status["NoNewPrivs"].strip() == "1"
        if os.getuid() != 0:  # non-dumpable: its /proc files belong to root, not the learner
            assert Path(f"/proc/{box.proc.pid}/mem").stat().st_uid == 0
    finally:
        box.close()


# -- 4. only the workspace, the exercise's public files and the libraries are visible ---------
def test_the_app_tree_and_its_history_are_not_visible(learner_dir: Path) -> None:
    paths = {"tests": ROOT / "tests" / "lab" / "solutions" / "correct.py",
             "git": ROOT / ".git", "reference": ROOT / "lab" / "reference" / "kv_bytes.py",
             "trainer": ROOT / "trainer", "readme": ROOT / "README.md"}
    probe = (
        f"paths = {({k: str(v) for k, v in paths.items()})!r}\n"
        "seen['exists'] = {k: os.path.exists(p) for k, p in paths.items()}\n"
        f"seen['lab'] = os.path.exists({str(ROOT / 'lab' / 'exercises' / 'kv_bytes')!r})\n"
        "import subprocess\n"
        "try:\n"
        "    seen['git'] = subprocess.run(['git', '-C', os.path.dirname(paths['trainer']),"
        " 'show', 'HEAD:lab/reference/kv_bytes.py'], capture_output=True).returncode\n"
        "except OSError as e:\n"
        "    seen['git'] = str(e)\n"
    )
    result, seen = grade_as_learner(learner_dir, probe)
    assert result["passed"]
    assert seen["exists"] == dict.fromkeys(paths, False)
    assert seen["lab"]  # the exercise's public files are still there
    assert seen["git"] != 0


# -- 7. the terminal is not reachable through what the learner printed ---------------------------
def test_escape_sequences_in_learner_output_are_stripped(learner_dir: Path) -> None:
    from lab.grader.events import from_dict
    from lab.grader.report import TextReport

    fake = "\x1b[2K\r\x1b[1;32mPASSED\x1b[0m all levels\x1b]0;owned\x07\n"
    body = CORRECT.replace("def kv_bytes_per_token(", "def _real(") + (
        "\ndef kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        f"    print({fake!r})\n"
        "    raise ValueError('\\x1b[32mok\\x1b[0m')\n")
    result, _ = grade_as_learner(learner_dir, "", body=body)
    assert not result["passed"]
    lines: list[str] = []
    report = TextReport(lines.append)
    for data in result["events"]:  # the JSON form: what `--json` and the TUI get
        event = from_dict(data)
        if event is not None:
            report(event)
    text = "\n".join(lines)
    assert "PASSED all levels" in text and "ValueError" in text, text
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


# -- 3. what the app trusts is not in the workspace; no link planted there is followed ---------
def test_planted_state_and_links_in_the_workspace_change_nothing(
    learner_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attacks on the workspace state: rewrite state.json to grade a correct file from tests/,
    plant a state.tmp (and backups/, and the workspace file itself) as links to the database."""
    import sqlite3

    from lab.exercises import get
    from lab.grader.runner import GradeOptions, UsageError, grade
    from scheduler.store import Store
    from tests import lab_state as workspace

    home = learner_dir / "home"
    monkeypatch.setenv("DOJO_HOME", str(home))
    ex = get("kv-bytes")
    path, _ = workspace.start(ex)  # the app's own start: the database has the state now
    with Store.open() as store:
        store.update_settings(new_limit=7)
    db = home / "dojo.sqlite3"
    outside = learner_dir / "outside"
    outside.mkdir()
    for p in (home, *home.rglob("*")):
        os.chown(p, NOBODY, NOBODY) if AS_NOBODY else None
    correct = ROOT / "tests" / "lab" / "solutions" / "correct.py"
    probe = (
        f"ws = {str(path.parent)!r}\n"
        "seen['state'] = oserr(lambda: open(os.path.join(ws, 'state.json'), 'w').write("
        f"json.dumps({{'workspace': {str(correct.parent)!r}, 'hints_shown': 99}})))\n"
        f"seen['tmp'] = oserr(os.symlink, {str(db)!r}, os.path.join(ws, 'state.tmp'))\n"
        f"seen['backups'] = oserr(os.symlink, {str(outside)!r}, os.path.join(ws, 'backups'))\n"
        f"seen['db'] = oserr(open, {str(db)!r}, 'r+b')\n"
    )
    result, seen = grade_as_learner(learner_dir, probe, ws=path.parent,
                                    body=CORRECT.replace("def kv_bytes_per_token(",
                                                         "def _real("))
    assert not result["passed"]
    assert seen["state"] == seen["tmp"] == seen["backups"] == "ok"  # its own folder: allowed
    assert seen["db"] in ("ENOENT", "EACCES")  # the database is not even there
    # the app, afterwards: same workspace file, no hint counted, links replaced not followed
    assert workspace.solution_path(ex) == path
    assert workspace.hints_shown(ex) == []
    workspace.start(ex)
    workspace.reset(ex)
    workspace.start_interview(ex, 1, 30)
    workspace.end_interview(ex)
    assert list(outside.iterdir()) == []
    assert (path.parent / "backups").is_dir() and not (path.parent / "backups").is_symlink()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Store.open() as store:
        assert store.settings().new_limit == 7
    # and a workspace file replaced by a link to a correct file elsewhere is not graded
    path.unlink()
    path.symlink_to(correct)
    with pytest.raises(UsageError, match="symbolic link"):
        grade(ex, path, GradeOptions(levels=[1], device="cpu"))


# -- 5. timed inputs cannot be known ahead; the learner's whole tree is stopped and counted -----
TIMED_DEMO = ROOT / "tests" / "lab" / "fixtures" / "timed_demo"
SANDBOX_SCRIPT = """
import json, sys, time
from pathlib import Path
from lab.exercises import load_exercise
from lab.grader.spawn import learner_sandbox, reference_guess, sandbox_options
ex = load_exercise(Path(sys.argv[1]), module="tests.lab.fixtures.timed_demo")
_, box = learner_sandbox(ex, Path(sys.argv[2]), "tests.lab.fixtures.timed_ref",
                         sandbox_options(ex, "cpu", 1536, None, True))
from lab.grader.api import Case, RunContext, to_wire
msg = {"op": "run", "case": to_wire(Case(id="c", level=1, params={"what": "sum", "n": 8})),
       "ctx": to_wire(RunContext(device="cpu", seed=0, dtype="float32")), "seeds": [1]}
out = {}
try:
    assert box.start().ok
    first = box.request(msg, 30)
    out["cpu_s"] = first.cpu_s
    ticks = Path(sys.argv[3])
    before = ticks.read_text()
    time.sleep(0.6)  # between requests: the learner's worker must not run
    out["ticked_between"] = ticks.read_text() != before
    box.request(msg, 30)
    out["ticked_during"] = ticks.read_text() != before
finally:
    box.close()
print(json.dumps(out))
"""
WORKER = """
import os, time
from pathlib import Path
TICKS = Path(__file__).with_name("ticks.txt")
TICKS.write_text("0")
r, w = os.pipe()
done_r, done_w = os.pipe()
if os.fork() == 0:  # a worker that outlives each call: it does the work, and ticks meanwhile
    os.set_blocking(r, False)
    n = 0
    while True:
        try:
            asked = os.read(r, 1)
        except BlockingIOError:
            asked = b""
        if asked:
            end = time.process_time() + 0.4
            while time.process_time() < end:
                pass
            os.write(done_w, b"x")
        n += 1
        TICKS.write_text(str(n))
        time.sleep(0.01)


def square_sum(a):
    os.write(w, b"x")
    os.read(done_r, 1)
    return (a @ a).sum()
"""


def test_a_forked_worker_is_counted_and_stopped_between_requests(learner_dir: Path) -> None:
    """A meter ledger's work handed to a forked worker that stays alive. Its CPU time
    is the learner's, and it does not run while the grader is not asking."""
    ws = learner_dir / "ws"
    solution = ws / "timed_demo.py"
    solution.write_text(WORKER)
    _owned(solution)
    seen = run_as_learner(learner_dir, SANDBOX_SCRIPT, str(TIMED_DEMO), str(solution),
                          str(ws / "ticks.txt"))
    assert seen["cpu_s"] >= 0.3, seen  # the worker's 0.4 s of CPU, not the waiting parent's 0
    assert not seen["ticked_between"], "the learner's worker ran between requests"
    assert seen["ticked_during"]


def test_timed_seeds_are_drawn_per_grading_not_derived_from_the_replay_seed(
    learner_dir: Path,
) -> None:
    ws = learner_dir / "ws"
    log = ws / "seeds.txt"
    log.write_text("")
    _owned(log)
    solution = ws / "timed_demo.py"
    solution.write_text(
        "import sys\n"
        "main = sys.modules['__main__']\n"
        "real = main.Child.calls\n"
        "def logged(self, msg):\n"
        "    if msg['op'] == 'batch':\n"
        f"        open({str(log)!r}, 'a').write(' '.join(map(str, msg['seeds'])) + '\\n')\n"
        "    return real(self, msg)\n"
        "main.Child.calls = logged\n"
        "def square_sum(a):\n"
        "    return (a @ a).sum()\n")
    _owned(solution)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lab.exercises import load_exercise\n"
        "from lab.grader.testing import grade_file\n"
        f"ex = load_exercise(Path({str(TIMED_DEMO)!r}), module='tests.lab.fixtures.timed_demo')\n"
        "runs = []\n"
        "for _ in range(2):\n"
        f"    Path({str(log)!r}).write_text('')\n"
        "    run = grade_file(ex, Path(sys.argv[1]), 1, seed=7, timing_repeats=2)\n"
        f"    runs.append(Path({str(log)!r}).read_text().split())\n"
        "    assert run.result.passed, run.describe()\n"
        "print(json.dumps(runs))\n")
    first, second = run_as_learner(learner_dir, script, str(solution))
    assert first and second
    assert not set(first) & set(second)  # same --seed, unrelated timed inputs
    assert not any(7000 <= int(s) < 8000 for s in first + second)  # not seed*1000 + k
