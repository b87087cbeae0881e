"""Hostile learner files against the allow-list sandbox, one class at a time, each
graded as the learner's user (`nobody` when the tests run as root) twice: on this machine (user
namespaces: the allow-list root) and on a system that denies user namespaces (Landlock with the
same allow-list). Nothing outside the allow-list can be named, every resource has a limit that
stops it with a message that says which, and no road leads to the reference.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.grader import landlock, limits
from tests.lab.conftest import ROOT
from tests.lab.test_confinement import CONFINED, NOBODY, grade_as_learner, learner_dir

__all__ = ["learner_dir"]  # the fixture, shared with test_confinement

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CONFINED, reason="no confinement on this machine")]
AS_ROOT = pytest.mark.skipif(os.getuid() != 0, reason="needs root")
MODES = [pytest.param(False, id="namespaces"),
         pytest.param(True, id="userns-denied",
                      marks=pytest.mark.skipif(landlock.abi_version() < 1,
                                               reason="no Landlock in this kernel"))]
REFERENCE = ROOT / "lab" / "reference" / "kv_bytes.py"
GRADING = ROOT / "lab" / "exercises" / "kv_bytes" / "grading" / "level1.py"
SITE = Path(next(p for p in __import__("sys").path if p.endswith("site-packages")))


@pytest.fixture(scope="module")
def planted() -> Iterator[dict[str, str]]:
    """Other roads to the reference, as a learner's machine may have them: a second copy of
    the app in the shared temporary folder, and compiled bytecode of the reference and of a
    grading module beside their sources."""
    copy = Path(tempfile.mkdtemp(prefix="dojo-copy-"))
    os.chmod(copy, 0o755)
    shutil.copytree(ROOT / "lab", copy / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    for path in (copy, *copy.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    pycs = {}
    for source in (REFERENCE, GRADING):
        target = importlib.util.cache_from_source(str(source))
        if not os.path.exists(target):
            py_compile.compile(str(source), cfile=target, doraise=True)
        pycs[source.stem] = target
    yield {"copy": str(copy / "lab" / "reference" / "kv_bytes.py"), **pycs}
    shutil.rmtree(copy, ignore_errors=True)


READS = """
def reach(path):
    try:
        with open(path, 'rb') as f:
            return 'read %d bytes' % len(f.read())
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
import importlib.util
for key, path in PATHS.items():
    seen['read ' + key] = reach(path)
seen['pytest found'] = importlib.util.find_spec('pytest') is not None  # installed, not allowed
seen['checkout'] = listing(ROOT)
seen['site'] = listing(SITE)
try:
    import trainer
    seen['trainer'] = 'imported'
except Exception as e:
    seen['trainer'] = type(e).__name__
seen['dev'] = listing('/dev')
seen['mknod'] = oserr(os.mknod, os.path.join(os.getcwd(), 'node'), 0o20666, os.makedev(1, 3))
import subprocess
seen['signal grader'] = subprocess.run(['kill', '-0', str(GRADER)],
                                       capture_output=True).returncode
s = __import__('socket').socket()
s.settimeout(2)
seen['tcp to the host'] = oserr(s.connect, ('127.0.0.1', PORT))
s.close()
"""


@pytest.mark.parametrize(("deny", "as_nobody"), [
    *((p.values[0], True) for p in MODES),
    pytest.param(True, False, id="root-userns-denied", marks=AS_ROOT)])
def test_nothing_outside_the_allow_list_can_be_named(
    learner_dir: Path, planted: dict[str, str], deny: bool, as_nobody: bool,
) -> None:
    """The reference by other roads (a copy in /tmp, the checkout an editable install points
    at, compiled bytecode), the database, the host's devices, the grader, the network."""
    db = learner_dir / "home" / "dojo.sqlite3"
    db.write_bytes(b"SQLite format 3\0")
    if os.getuid() == 0:
        os.chown(db, NOBODY, NOBODY)
    paths = {"copy in /tmp": planted["copy"], "reference": str(REFERENCE),
             "reference .pyc": planted["kv_bytes"], "grading .pyc": planted["level1"],
             "grading": str(GRADING), "tests": str(ROOT / "tests" / "lab" / "conftest.py"),
             "database": str(db), "editable .pth": str(SITE / "_editable_impl_serving_dojo.pth")}
    if not as_nobody:  # root grades: the workspace is root's (no capability is left inside)
        os.chown(learner_dir / "ws", 0, 0)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        probe = (f"PATHS = {paths!r}\nROOT = {str(ROOT)!r}\nSITE = {str(SITE)!r}\n"
                 f"GRADER = {os.getpid()}\nPORT = {listener.getsockname()[1]}\n" + READS)
        result, seen = grade_as_learner(learner_dir, probe, deny_userns=deny,
                                        as_nobody=as_nobody)
    finally:
        listener.close()
    assert result["passed"], [e for e in result["events"] if e["event"] == "case_failed"][:1]
    notice = [e["message"] for e in result["events"] if e["event"] == "notice"]
    landlock_mode = deny and as_nobody  # root without user namespaces still has mount ones
    assert notice and notice[0].startswith(
        "sandbox: Landlock + seccomp" if landlock_mode else "sandbox: namespaces + seccomp"), \
        notice
    for key in paths:
        assert not seen["read " + key].startswith("read"), (key, seen)
    # the checkout shows the learner-facing runtime only (and the venv's own files)
    assert seen["checkout"] in ("EACCES", ["lab"], [".venv", "lab"]), seen["checkout"]
    assert seen["trainer"] in ("ModuleNotFoundError", "PermissionError"), seen["trainer"]
    # a package that is there but not allowed looks absent (libraries probe optional ones)
    assert seen["pytest found"] is False
    if not landlock_mode:  # (under Landlock the folders themselves cannot be listed)
        site = seen["site"]
        assert "_editable_impl_serving_dojo.pth" not in site and "torch" not in site, site
        assert "pytest" not in site and "numpy" in site, site
        assert set(seen["dev"]) == {"null", "zero", "full", "random", "urandom", "shm", "fd",
                                    "stdin", "stdout", "stderr"}, seen["dev"]
    assert seen["mknod"] in ("EPERM", "EACCES")
    assert seen["signal grader"] != 0
    assert seen["tcp to the host"] != "ok"


FILES = """
ws = os.getcwd()
def grow(name, step):
    path = os.path.join(ws, name)
    try:
        step(path)
        return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        seen[name + ' on disk'] = os.stat(path).st_blocks * 512 if os.path.exists(path) else 0
        if os.path.exists(path):
            os.unlink(path)
def sparse(path):
    with open(path, 'wb') as f:
        f.truncate(8 << 30)
def prealloc(path):
    with open(path, 'wb') as f:
        os.posix_fallocate(f.fileno(), 0, 1 << 30)
def writer(path):
    with open(path, 'wb') as f:
        for _ in range(200):
            f.write(b'x' * (1 << 20))
seen['sparse'] = grow('sparse', sparse)
seen['prealloc'] = grow('prealloc', prealloc)
seen['writer'] = grow('writer', writer)
def shm(path):
    with open(path, 'wb') as f:
        for _ in range(2048):
            f.write(b'x' * (1 << 20))
seen['shm'] = oserr(shm, '/dev/shm/fill')
"""


@pytest.mark.parametrize("deny", MODES)
def test_files_stop_at_the_size_limit_on_disk(learner_dir: Path, deny: bool) -> None:
    """A sparse file, a preallocated one and a writing loop stop at RLIMIT_FSIZE (nothing past
    it reaches the disk); /dev/shm is private and capped, or not there at all."""
    result, seen = grade_as_learner(learner_dir, FILES, deny_userns=deny)
    assert result["passed"]
    assert seen["sparse"] == seen["prealloc"] == seen["writer"] == "EFBIG", seen
    cap = limits.FILE_LIMIT_MB << 20
    assert seen["writer on disk"] <= cap + (1 << 20), seen
    assert seen["sparse on disk"] < (1 << 20) and seen["prealloc on disk"] < (1 << 20), seen
    assert seen["shm"] in ("ENOSPC", "EFBIG", "EACCES", "ENOENT"), seen


def _kv(body: str) -> str:
    return ("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
            + "".join(f"    {line}\n" for line in body.splitlines()))


def _failure(result: dict[str, Any]) -> dict[str, Any]:
    failed = [e for e in result["events"] if e["event"] == "case_failed"]
    assert failed, result["events"][-1]
    return failed[0]


@pytest.mark.parametrize("deny", MODES)
def test_a_file_writer_is_told_what_it_wrote(learner_dir: Path, deny: bool) -> None:
    body = _kv("with open('big.bin', 'wb') as f:\n"
               "    while True:\n"
               "        f.write(b'x' * (1 << 20))")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "limit", failure
    assert failure["message"] == (
        f"your code wrote a file up to {limits.FILE_LIMIT_MB} MiB, the sandbox's limit on one "
        "file (stopped there: nothing past it reached the disk) (kv_bytes.py:18, in "
        "kv_bytes_per_token)"), failure["message"]
    assert "infinite loop" not in failure["message"]
    assert (learner_dir / "ws" / "big.bin").stat().st_size == limits.FILE_LIMIT_MB << 20


@pytest.mark.parametrize("deny", MODES)
def test_many_files_stop_at_the_workspace_limit(learner_dir: Path, deny: bool) -> None:
    """Each file under the size limit, together past what a workspace may gain."""
    body = _kv("for i in range(1000):\n"
               "    with open(f'part{i}.bin', 'wb') as f:\n"
               "        for _ in range(10):\n"
               "            f.write(b'x' * (1 << 20))")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "disk", failure
    assert failure["message"].startswith("your code wrote "), failure["message"]
    assert failure["message"].endswith(
        f"to your workspace folder, over the sandbox's limit of {limits.WORKSPACE_LIMIT_MB} "
        "MiB — stopped"), failure["message"]
    written = sum(p.stat().st_blocks * 512 for p in (learner_dir / "ws").glob("part*.bin"))
    # counted every 0.5 s (more often slowed the timed children): a fast writer gets past it
    assert written < 1000 * (10 << 20), written  # but is stopped well before its 10 GB


@pytest.mark.parametrize("deny", MODES)
def test_a_print_flood_is_stopped_and_says_what_it_printed(learner_dir: Path,
                                                          deny: bool) -> None:
    body = _kv("n = 0\n"
               "while True:\n"
               "    n += 1\n"
               "    print('step', n, 'of a loop that never ends', '.' * 8000)")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "output", failure
    assert failure["message"].startswith(
        "your code printed more than 4 MiB ("), failure["message"]
    first = failure["message"].split("\n")[1:]
    assert first and any(line.startswith("  step ") for line in first), first
    assert "infinite loop" not in failure["message"]
    assert failure["output"].startswith("… (")  # the true count of the lines not shown
    not_shown = int(failure["output"][3:].split(" ", 1)[0])
    assert not_shown > 400, failure["output"][:80]  # 4 MiB of 8 KB lines


@pytest.mark.parametrize("deny", MODES)
def test_shared_memory_counts_against_the_memory_cap(learner_dir: Path, deny: bool) -> None:
    """An anonymous shared-memory file is no process's RSS: counted all the same."""
    body = _kv("import os, time\n"
               "hoard = []\n"  # each file under the size limit, together past the memory cap
               "for i in range(40):\n"
               "    hoard.append(os.memfd_create(f'hoard{i}'))\n"
               "    for _ in range(60):\n"
               "        os.write(hoard[-1], b'x' * (1 << 20))\n"
               "time.sleep(30)")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "memory", failure
    assert "of it shared memory" in failure["message"], failure["message"]


@pytest.mark.parametrize("deny", MODES)
def test_a_thread_bomb_is_stopped_at_the_process_limit(learner_dir: Path, deny: bool) -> None:
    body = _kv("import threading, time\n"
               "for _ in range(2000):\n"
               "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
               "time.sleep(60)")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)  # counted by the grader, or refused by the kernel first
    assert failure["kind"] in ("processes", "limit"), failure
    assert failure["message"].endswith((
        f"over the sandbox's limit of {limits.MAX_PROCESSES} (a fork or thread bomb?) — "
        "stopped", "(a fork or thread bomb?) (kv_bytes.py:18, in kv_bytes_per_token)")), \
        failure["message"]


@pytest.mark.parametrize("deny", MODES)
def test_no_unix_socket_of_the_host_can_be_reached(learner_dir: Path, deny: bool) -> None:
    """A tmux server, an SSH agent or the session bus listen on Unix socket files: reaching
    one runs commands outside the sandbox. Landlock does not check a connect() to such a file,
    so under it the only Unix sockets are connected pairs (not datagram ones, which could send
    to an address); with namespaces the host's files are not even there."""
    host = Path(tempfile.mkdtemp(prefix="dojo-host-"))
    os.chmod(host, 0o755)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(host / "server.sock"))
    server.listen()
    server.setblocking(False)
    os.chmod(host / "server.sock", 0o777)
    probe = (f"PATH_ = {str(host / 'server.sock')!r}\n"
             "import socket\n"
             "def connect():\n"
             "    with socket.socket(socket.AF_UNIX) as s:\n"
             "        s.connect(PATH_)\n"
             "        s.sendall(b'tmux send-keys')\n"
             "def datagram():\n"
             "    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
             "    a.sendto(b'to an address', PATH_)\n"
             "def pair():\n"
             "    a, b = socket.socketpair()\n"
             "    a.sendall(b'ok')\n"
             "    assert b.recv(2) == b'ok'\n"
             "seen['connect'] = oserr(connect)\n"
             "seen['datagram'] = oserr(datagram)\n"
             "seen['pair'] = oserr(pair)\n")
    try:
        result, seen = grade_as_learner(learner_dir, probe, deny_userns=deny)
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()
        shutil.rmtree(host, ignore_errors=True)
    assert result["passed"]
    assert seen["connect"] in ("EPERM", "ENOENT") and seen["datagram"] in ("EPERM", "ENOENT"), \
        seen
    assert seen["pair"] == "ok"  # multiprocessing's pipes still work


@pytest.mark.parametrize("how", ["open", "mapped"])
@pytest.mark.parametrize("deny", MODES)
def test_removed_files_still_held_count_against_the_workspace(learner_dir: Path, deny: bool,
                                                              how: str) -> None:
    """A file removed while open (or mapped) is in no folder, but holds its blocks: 1024 of
    them at the 64 MiB file limit would fill 64 GiB of disk."""
    hold = ("held.append(os.dup(f.fileno()))" if how == "open"
            else "held.append(mmap.mmap(f.fileno(), 4096))")
    body = _kv("import mmap, time\n"
               "held = []\n"
               "for i in range(8):\n"
               "    with open(f'part{i}.bin', 'w+b') as f:\n"
               "        for _ in range(64):\n"
               "            f.write(b'x' * (1 << 20))\n"
               "        f.flush()\n"
               f"        {hold}\n"
               "    os.unlink(f'part{i}.bin')\n"
               "time.sleep(30)")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "disk", failure
    assert failure["message"].endswith(
        f"to your workspace folder, over the sandbox's limit of {limits.WORKSPACE_LIMIT_MB} "
        "MiB — stopped"), failure["message"]


@AS_ROOT
def test_a_workspace_closed_to_the_sandbox_is_named(learner_dir: Path) -> None:
    """Root grading a file in another user's private folder: in the sandbox's user namespace
    root has no rights over that user's files, so the workspace cannot be opened. The message
    says so (it said "a nested user namespace (locked mounts): No such file or directory")."""
    from tests.lab.test_confinement import GRADE, run_as_learner

    closed = learner_dir / "closed"
    (closed / "ws").mkdir(parents=True)
    solution = closed / "ws" / "kv_bytes.py"
    shutil.copy(ROOT / "tests" / "lab" / "solutions" / "correct.py", solution)
    os.chown(closed, NOBODY, NOBODY)
    os.chmod(closed, 0o700)
    os.chmod(learner_dir, 0o755)
    result = run_as_learner(learner_dir, GRADE, "kv-bytes", str(solution), "1",
                            as_nobody=False)
    failure = _failure(result)
    assert failure["kind"] == "sandbox", failure
    assert f"your workspace folder {closed / 'ws'} cannot be opened from the sandbox " \
           "(Permission denied)" in failure["message"], failure["message"]



@pytest.mark.parametrize("deny", MODES)
def test_an_orphaned_process_is_still_counted(learner_dir: Path, deny: bool) -> None:
    """A double-forked process whose parent is gone: under Landlock it reparents to the
    waiter, not to the learner's process, and its 1100 threads were not counted (nor its
    memory, CPU time, or stopping between requests: the same tree)."""
    body = _kv("import threading, time\n"
               "if os.fork() == 0:\n"
               "    if os.fork() == 0:\n"
               "        threading.stack_size(1 << 16)  # under the data limit\n"
               "        for _ in range(1100):\n"
               "            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
               "        time.sleep(60)\n"
               "    os._exit(0)\n"
               "time.sleep(3)\n"
               "return 32")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert failure["kind"] == "processes", failure
    assert failure["message"].endswith(
        f"over the sandbox's limit of {limits.MAX_PROCESSES} (a fork or thread bomb?) — "
        "stopped"), failure["message"]


@pytest.mark.parametrize("deny", MODES)
def test_making_the_workspace_too_large_to_count_is_stopped(learner_dir: Path,
                                                            deny: bool) -> None:
    """The workspace is counted up to 2,000 entries: 2,500 empty files beside a subfolder
    switched the count off, and 512 MiB written into the subfolder went unseen."""
    body = _kv("import time\n"
               "os.makedirs('deep', exist_ok=True)  # where the rest would go, never counted\n"
               "for i in range(2100):\n"
               "    open(f'empty{i}', 'w').close()\n"
               "time.sleep(3)\n"
               "return 32")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert (failure["kind"], failure["message"]) == ("disk", (
        f"your code made more than {limits.WATCHED_ENTRIES:,} files and folders in your "
        "workspace folder, more than the sandbox can watch — stopped")), failure


@pytest.mark.parametrize("deny", MODES[1:])
def test_a_process_killed_by_sigkill_is_said_so(learner_dir: Path, deny: bool) -> None:
    """The waiter mirrors how the learner's process ended; a SIGKILL (the kernel's OOM
    killer's, or the code's own) came out as 'the process exited with status 1 without
    answering (os._exit or a native abort?)'. (With namespaces the learner's process is its
    PID namespace's init, which its own SIGKILL does not end.)"""
    body = _kv("import signal\n"
               "os.kill(os.getpid(), signal.SIGKILL)")
    result, _ = grade_as_learner(learner_dir, "", body=body, deny_userns=deny)
    failure = _failure(result)
    assert (failure["kind"], failure["message"]) == (
        "crash", "your code crashed the process (SIGKILL, killed — out of memory?)"), failure
