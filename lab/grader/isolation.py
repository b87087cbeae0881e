"""The grader's handle on a sandbox child: spawn, request with deadline, watch memory, kill.

The child's stdout and stderr go to a temporary file so the learner's prints are captured (and
shown trimmed) without ever touching the grader's own output or the frame pipe. Memory is capped
by polling the child's resident set size from /proc (RLIMIT_AS breaks torch's address-space
reservations) and, on CPU, backed by RLIMIT_DATA set inside the child. The child confines itself
(`lab.grader.confine`) and its first frame names the process that runs the learner's code and the
protections that could not be set up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.grader import limits, protocol, root, scratch
from lab.grader.api import DEVICE_VAR
from lab.grader.signal_guard import TOKEN_VAR

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTPUT_LIMIT_CHARS = 2000
OUTPUT_LIMIT_LINES = 25
DATA_LIMIT_SLACK_MB = 512
CAPTURE_TAIL_BYTES = 64 * 1024


@dataclass
class ChildReply:
    """What one request produced: a value, or a failure `kind` with a message for the learner.

    kinds: exception, not_implemented, exit, memory, timeout, crash, forbidden_import, protocol,
    unsendable (the result is not plain data).
    """

    ok: bool
    value: Any = None
    kind: str = ""
    message: str = ""
    traceback: str = ""
    output: str = ""
    elapsed_s: float = 0.0  # round trip measured here, from sending the request to the reply
    cpu_s: float = 0.0  # CPU time the kernel charged the child meanwhile (see `cpu_s`)
    values: list[Any] = field(default_factory=list)
    # a "timed" request (lab.grader.gpu_timing): per-call seconds on the device's clock and
    # the seeds those calls used, as the child reported them (checked by the grader)
    times: list[Any] = field(default_factory=list)
    seeds: list[Any] = field(default_factory=list)

    @property
    def child_lost(self) -> bool:
        """The child was killed or died: the next request needs a fresh one."""
        return self.kind in ("timeout", "memory", "crash", "protocol", "sandbox", "output",
                             "processes", "disk")


class Cancelled(Exception):
    """The caller asked to stop (the TUI's cancel button); the child has been killed."""


class MemoryExceeded(Exception):
    def __init__(self, rss_mb: float, shared_mb: float = 0.0) -> None:
        super().__init__(f"{rss_mb:.0f} MiB")
        self.rss_mb = rss_mb
        self.shared_mb = shared_mb


class LimitExceeded(Exception):
    """A limit the grader counts (output, processes, the temporary folder) was passed: `kind`
    and the learner's message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# polls (of 20 ms) between two counts of shared memory, processes and the workspace: every
# 0.1 s the count stole enough CPU on a loaded 2-core machine to double a 25 ms reference call
# (spec-verify L3: a 24x vocabulary loop measured 12x); every 0.5 s it does not
SHARED_EVERY = 25


def memfd_mb(pids: list[int]) -> float:
    """Anonymous shared-memory files (memfd_create, memfd_secret) the processes hold open, in
    MiB: charged to no process's RSS until mapped, so counted here against the memory cap (each
    file once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in pids:
        for path, target in _open_files(pid):
            if not target.startswith(("/memfd:", "/secretmem")):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                # a secret memory file shows no blocks: its size is what it may hold
                total += st.st_size if target.startswith("/secretmem") else st.st_blocks * 512
    return total / (1 << 20)


def _open_files(pid: int) -> list[tuple[str, str]]:
    """(/proc path, what it names) of each file descriptor a process holds."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    out = []
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        with contextlib.suppress(OSError):
            out.append((path, os.readlink(path)))
    return out


def unlinked_mb(pids: list[int], devices: set[int]) -> dict[int, float]:
    """MiB that files removed from their folder but still open or mapped by the processes hold
    on each of `devices` (the workspace's and the temporary folder's file systems): no folder
    count sees them, and a process holding 1024 of them at the 64 MiB file limit would fill
    64 GiB of disk. An open one is measured exactly (its blocks); a mapped one with no
    descriptor left through /proc/<pid>/map_files where this process may (root), else by the
    span mapped."""
    seen: set[tuple[int, int]] = set()
    total: dict[int, float] = {}

    def count(st: os.stat_result) -> None:
        if st.st_dev in devices and st.st_nlink == 0 and st.st_blocks \
                and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total[st.st_dev] = total.get(st.st_dev, 0.0) + st.st_blocks * 512 / (1 << 20)

    for pid in pids:
        for path, target in _open_files(pid):
            if target.endswith(" (deleted)"):
                with contextlib.suppress(OSError):
                    count(os.stat(path))
        for span, dev, inode in _deleted_mappings(pid, devices):
            if (dev, inode) in seen:
                continue
            try:
                count(os.stat(f"/proc/{pid}/map_files/{span}"))
            except OSError:  # not ours to follow: the span mapped is what can be seen
                start, end = (int(x, 16) for x in span.split("-"))
                seen.add((dev, inode))
                total[dev] = total.get(dev, 0.0) + (end - start) / (1 << 20)
    return total


def _deleted_mappings(pid: int, devices: set[int]) -> list[tuple[str, int, int]]:
    """(address span, device, inode) of each mapping of a removed file on one of `devices`."""
    wanted = {f"{os.major(d):02x}:{os.minor(d):02x}": d for d in devices}
    out = []
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.rstrip().endswith("(deleted)"):
                    continue
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[3] in wanted:
                    out.append((fields[0], wanted[fields[3]], int(fields[4])))
    except (OSError, ValueError):
        pass
    return out


def folder_mb(folder: str, limit_entries: int = 10000) -> float:
    """Bytes a folder's files hold on disk (blocks, not sizes: a sparse file counts what it
    uses), in MiB; stops counting after `limit_entries` entries (then -1 when it stopped
    before the end: `folder_size` says whether a folder can be watched at all)."""
    total, seen, todo = 0, 0, [folder]
    while todo and seen < limit_entries:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
    return -1.0 if todo else total / (1 << 20)


# ESC-introduced sequences (CSI "ESC [ ... final", OSC/DCS/APC/PM "... BEL or ESC \\", two-byte
# escapes), their 8-bit C1 forms, then any other control character but tab and newline, and the
# Unicode controls that reorder what a terminal shows (bidi overrides and isolates)
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x9d\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """What the learner's code printed (or put in an exception message), safe to show on a
    terminal: escape sequences and control characters removed, carriage returns made line
    breaks, so their output cannot recolour, move the cursor over, retitle or hide the verdict."""
    text = _ESCAPES.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def trim_output(text: str, total_lines: int | None = None) -> str:
    """Keep the tail of the learner's output: the last lines are the ones that explain a crash.
    `total_lines`: how many lines were printed in all, when `text` is only the tail of it."""
    if not text:
        return ""
    lines = text.splitlines()
    dropped = 0 if total_lines is None else max(0, total_lines - len(lines))
    if len(lines) > OUTPUT_LIMIT_LINES:
        dropped += len(lines) - OUTPUT_LIMIT_LINES
        lines = lines[-OUTPUT_LIMIT_LINES:]
    out = "\n".join(lines)
    if len(out) > OUTPUT_LIMIT_CHARS:
        out = "…" + out[-OUTPUT_LIMIT_CHARS:]
    if dropped:
        out = f"… ({dropped} earlier lines not shown)\n" + out
    return out


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """CPU seconds the kernel has charged to a process: user + system of all its threads, plus
    the children it waited for (0 when it is gone). Read from outside, so the process cannot
    misreport it; a tick is 1/CLK_TCK s (10 ms), small against a >= 100 ms timed batch."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(")") + 2:].split()  # the name may contain spaces
        return sum(int(f) for f in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime
    except (OSError, ValueError):
        return 0.0


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}  # read(2)'s number, as /proc/<pid>/syscall shows it
PIPE_MESSAGE = ("your code closed or replaced the sandbox's result pipe (a file descriptor it "
                "did not open), so no answer could be sent — leave those alone")


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "the process stopped answering"
    if returncode == protocol.PIPE_LOST:
        return PIPE_MESSAGE
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        extra = {
            "SIGSEGV": "segmentation fault",
            "SIGBUS": "bus error",
            "SIGABRT": "abort",
            "SIGKILL": "killed — out of memory?",
            "SIGFPE": "arithmetic fault",
        }.get(name, "")
        return f"your code crashed the process ({name}{', ' + extra if extra else ''})"
    return (
        f"the process exited with status {returncode} without answering "
        "(os._exit or a native abort?) — return a value instead of exiting"
    )


_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def process_tree(pid: int) -> list[int]:
    """`pid` and every process descending from it (Linux: /proc/<pid>/task/*/children, a few
    reads; elsewhere psutil). In the sandbox's PID namespace every process of the run descends
    from its init, however detached; unconfined, the child is a subreaper, so orphans still do."""
    if _PROC_CHILDREN:
        out, i = [pid], 0
        while i < len(out):
            parent = out[i]
            i += 1
            try:
                tasks = os.listdir(f"/proc/{parent}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as fh:
                        out.extend(int(c) for c in fh.read().split())
                except (OSError, ValueError):
                    continue
        return list(dict.fromkeys(out))
    import psutil

    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


def _countable(mb: float, where: str, entries: int) -> None:
    """Raise LimitExceeded when a folder the learner's code writes to could not be counted to
    its end (`folder_mb` gave -1): 2,500 empty files made beside a subfolder switched the count
    off, and 512 MiB written into the subfolder were never seen."""
    if mb < 0:
        raise LimitExceeded("disk", (
            f"your code made more than {entries:,} files and folders in {where}, more than "
            "the sandbox can watch — stopped"))


def _process_limit(tree: list[int]) -> None:
    """Raise LimitExceeded when the tree holds more processes and threads than allowed."""
    threads = sum(_threads(p) for p in tree)
    if threads > limits.MAX_PROCESSES:
        raise LimitExceeded("processes", (
            f"your code started {threads} processes and threads, over the sandbox's limit "
            f"of {limits.MAX_PROCESSES} (a fork or thread bomb?) — stopped"))


def _state(pid: int) -> str:
    """A process's state letter (R, S, T for stopped...), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
        return stat[stat.rindex(")") + 2:].split(maxsplit=1)[0]
    except (OSError, ValueError, IndexError):
        return ""


def _threads(pid: int) -> int:
    """How many threads a process has (0 when it is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _pss_mb(pid: int) -> float:
    """Proportional set size (shared pages split between their users): a forked worker shares
    its parent's pages, and counting its RSS in full would count them twice."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return rss_mb(pid)


def tree_rss_mb(pid: int, reaper: bool = False) -> float:
    """Memory of the whole process tree in MiB: the main process's RSS (polled every 20 ms:
    cheap), and when it has started others, the tree's proportional set size. `reaper`: `pid`
    is the subreaper the learner's orphans reparent to (Landlock's waiter), not one of
    theirs: its descendants only."""
    if not _PROC_CHILDREN:
        import psutil

        total = 0.0
        for p in process_tree(pid):
            try:
                total += psutil.Process(p).memory_info().rss / (1 << 20)
            except psutil.Error:
                continue
        return total
    tree = process_tree(pid)[1 if reaper else 0:]
    if len(tree) == 1:
        return rss_mb(tree[0])
    return sum(_pss_mb(p) for p in tree)


def tree_cpu_s(pid: int, reaper: bool = False) -> float:
    """CPU seconds charged to the whole tree: each live process's own and its reaped children's
    (`cpu_s`), so work handed to a forked worker is counted as the learner's."""
    if not _PROC_CHILDREN and not os.path.isdir(f"/proc/{pid}"):
        import psutil

        total = 0.0
        for p in process_tree(pid):
            try:
                t = psutil.Process(p).cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                continue
        return total
    if reaper:  # its descendants', and those it reaped (the learner's orphans)
        return reaped_cpu_s(pid) + sum(cpu_s(p) for p in process_tree(pid)[1:])
    return sum(cpu_s(p) for p in process_tree(pid))


def reaped_cpu_s(pid: int) -> float:
    """CPU seconds of the children a process has waited for (cutime + cstime)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(")") + 2:].split()
        return sum(int(f) for f in fields[13:15]) / CLOCK_TICKS
    except (OSError, ValueError):
        return 0.0


def signal_tree(pid: int, sig: int, reaper: bool = False) -> list[int]:
    """Send `sig` to every process of the tree (with `reaper`, `pid`'s descendants only), again
    until no new one appears (a fork between the listing and the signal); returns the pids
    signalled."""
    done: list[int] = [pid] if reaper else []
    for _ in range(8):
        new = [p for p in process_tree(pid) if p not in done]
        if not new:
            break
        for p in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, sig)
            done.append(p)
    return done[1:] if reaper else done


def kill_tagged(var: str, token: str) -> int:
    """SIGKILL every process whose environment has var=token (Linux /proc; elsewhere the
    process group kill has to do). Returns how many were killed."""
    if not token or not os.path.isdir("/proc"):
        return 0
    tag = f"{var}={token}".encode()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if tag not in f.read().split(b"\0"):
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError):  # gone, or not ours to read
            continue
    return killed


def _git_roots(root: Path) -> list[Path]:
    """The checkout holding the git history of `root` when `root` is a linked worktree (its
    `.git` file names a gitdir inside another checkout's `.git`)."""
    marker = root / ".git"
    if not marker.is_file():
        return []
    try:
        text = marker.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = (root / text.split(":", 1)[1].strip()).resolve()
    for parent in gitdir.parents:
        if parent.name == ".git":
            return [parent.parent]
    return []


class Sandbox:
    """One child at a time; `restart()` gives a fresh one after a kill or crash."""

    def __init__(
        self,
        *,
        solution: Path,
        load: dict[str, Any],
        module_name: str,
        memory_mb: int,
        torch_threads: int | None = None,
        data_limit: bool = True,
        load_timeout_s: float = 60.0,
        confine: bool = True,
        needs_torch: bool = False,
        network: bool = False,
        device: str = "cpu",
        read_also: tuple[str, ...] = (),
    ) -> None:
        self.solution = solution.resolve()
        self.load = load
        self.confine = confine
        self.needs_torch = needs_torch
        self.network = network
        self.read_also = list(read_also)  # the learner's own checkpoint folders
        self.device = device  # DOJO_LAB_DEVICE in the child: known before any import there
        self.mode = ""  # which confinement the child runs under (lab.grader.confine)
        self.lifeline = -1  # our end of the pipe whose closing ends the child's whole tree
        self.tmp_dir = ""  # the private temporary folder where Landlock confines the child
        self.pid = 0  # the process running the learner's code (inside the namespace, if any)
        self.missing: list[str] = []  # protections the child could not set up
        self.module_name = module_name
        self.memory_mb = memory_mb
        self.torch_threads = torch_threads
        self.data_limit = data_limit
        self.load_timeout_s = load_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.token = ""  # in the child's environment: finds what it spawned, see kill()
        self.reader: protocol.Reader | None = None
        self.wfd = -1
        self.capture: Any = None
        self.peak_rss_mb = 0.0
        self.spawned = 0
        self.ready = False  # spawned and warmed by `prepare`, the learner's module not loaded
        self.cancelled: Callable[[], bool] = lambda: False
        self.frozen: list[int] = []  # pids stopped between requests (see _freeze)
        self.polls = 0
        self.shared_mb = 0.0
        self.workspace_mb = -1.0
        self.child_wfd = self.child_rfd = -1

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ChildReply:
        """Load the learner's module into a child: the one `prepare` spawned ahead, if it is
        still waiting, else a fresh one."""
        if not (self.ready and self.alive):
            hello = self._spawn()
            if not hello.ok and hello.kind:
                return hello
        self.ready = False
        return self.request(
            {**self.load, "solution": str(self.solution), "module_name": self.module_name,
             "torch_threads": self.torch_threads},
            self.load_timeout_s,
        )

    def prepare(self, device: str | None = None) -> ChildReply:
        """Spawn the child before its grading and import the exercise's trusted modules into it
        (the drive: torch and the lab's helpers; with `device`, the drive's `warm` loads its
        models too), so that `start` then only loads the learner's file — read at that moment,
        so edits made meanwhile count."""
        out = self._spawn()
        if not out.ok and out.kind:
            return out
        out = self.request({"op": "warm", "drive": self.load["drive"], "device": device,
                            "torch_threads": self.torch_threads}, self.load_timeout_s)
        if out.ok:
            self.ready = True
        else:
            self.close()
        return out

    def _spawn(self) -> ChildReply:
        """A fresh child that has said hello (confinement set up, nothing imported)."""
        self.close()
        if self.cancelled():  # asked to stop before there was a child: none is started
            raise Cancelled()
        self.mode, self.shared_mb, self.polls = "", 0.0, 0
        # what the workspace holds now: the learner's code may add WORKSPACE_LIMIT_MB to it
        # (not watched when it holds more entries than can be counted every 0.1 s)
        if self.spawned == 0:  # once per sandbox: a respawned child gets no fresh allowance
            self.workspace_mb = folder_mb(str(self.solution.parent), limits.WATCHED_ENTRIES) \
                if self.confine and self._workspace_writable() else -1.0
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # append mode: the child always writes at the end, whatever the grader does with the
        # (shared) file offset; lives as long as the child
        self.capture = tempfile.TemporaryFile(mode="a+b")  # noqa: SIM115
        env = dict(os.environ)
        self.token = uuid.uuid4().hex
        env[TOKEN_VAR] = self.token
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env[DEVICE_VAR] = self.device  # e.g. a Triton drive interprets its kernels off CUDA
        env["HF_HUB_OFFLINE"] = "1"  # grading never downloads anything
        env["TRANSFORMERS_OFFLINE"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])]
        )
        cmd = [  # -P: the learner's folder (the cwd) must not shadow real modules
            sys.executable, "-P", "-m", "lab.grader.sandbox",
            "--rfd", str(to_child_r), "--wfd", str(from_child_w),
        ]
        if self.data_limit:
            cmd += ["--data-limit-mb", str(self.memory_mb + DATA_LIMIT_SLACK_MB)]
        cmd += ["--workspace", str(self.solution.parent)]
        lifeline_r, self.lifeline = os.pipe()
        cmd += ["--lifeline", str(lifeline_r)]
        if self.confine:  # named for this process: a sweep removes it only once we are gone
            scratch.sweep_once()  # what a killed grader left (SIGKILL: no handler ran)
            self.tmp_dir = scratch.make("dojo-sandbox-")
            cmd += ["--root", self.root_spec().to_json()]
            cmd += ["--network"] if self.network else []
        else:
            cmd.append("--unconfined")
        try:
            self.proc = subprocess.Popen(
                cmd,
                pass_fds=(to_child_r, from_child_w, lifeline_r),
                stdin=subprocess.DEVNULL,
                stdout=self.capture,
                stderr=subprocess.STDOUT,
                cwd=str(self.solution.parent),
                env=env,
                start_new_session=True,  # so a kill reaches anything the learner spawned
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
            os.close(lifeline_r)
        self.spawned += 1
        self.wfd = to_child_w
        self.reader = protocol.Reader(from_child_r)
        self.child_wfd = from_child_w  # the number the child writes its answers to
        self.child_rfd = to_child_r  # and the one it reads requests from
        self.pid = self.proc.pid
        return self.request({"op": "hello"}, self.load_timeout_s, send=False)

    def root_spec(self) -> root.RootSpec:
        """What the child may see (`lab.grader.root`): the runtime its load message allows."""
        trusted = bool(self.load.get("trusted"))
        # the grader's own reference child sees the reference and the exercise's package too
        judge = [*self.load.get("reference_paths", []), *self.load.get("guarded_paths", [])]
        spec = root.build(allowed=dict(self.load.get("allowed", {})),
                          solution=str(self.solution), needs_torch=self.needs_torch,
                          trusted=trusted, gpu=self.device == "cuda", tmp_mb=self.shm_mb,
                          checkout=[str(REPO_ROOT), *map(str, _git_roots(REPO_ROOT))],
                          data=root.data_folder(),
                          extra_read=[*self.read_also, *(judge if trusted else [])])
        spec.tmp_dir = self.tmp_dir
        return spec

    @property
    def shm_mb(self) -> int:
        """The private /dev/shm (and TMPDIR) size: a slice of the memory cap."""
        return max(16, min(256, self.memory_mb // 8))

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill the child and everything it started: its process group (even after the child
        itself exited: a plain fork stays in the group), then any process still carrying this
        sandbox's token in its environment (one that called setsid() to leave the group)."""
        proc = self.proc
        if proc is None:
            return
        self.signal_kill()
        proc.wait()
        kill_tagged(TOKEN_VAR, self.token)

    def signal_kill(self) -> None:
        """SIGKILL the child without waiting and without touching this object's state: safe
        while another thread is in `request` (the closed pipe ends it; that thread's error
        path, or `close`, then cleans up)."""
        proc, inner = self.proc, self.pid
        if proc is None:
            return
        if inner and inner != proc.pid:  # the namespace's init: takes all with it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(inner, signal.SIGKILL)
        # the group id cannot be reused while any member is alive, so this is safe after exit
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill the child (it holds nothing to save: a polite exit of a torch process costs a
        tenth of a second per child) and release the pipes, capture file and temporary
        folder."""
        self.ready = False
        if self.proc is not None:
            self.kill()
            self.proc = None
        if self.lifeline >= 0:
            os.close(self.lifeline)
            self.lifeline = -1
        if self.tmp_dir:
            scratch.remove(self.tmp_dir)
            self.tmp_dir = ""
        if self.reader is not None:
            os.close(self.reader.fd)
            self.reader = None
        if self.wfd >= 0:
            os.close(self.wfd)
            self.wfd = -1
        if self.capture is not None:
            self.capture.close()
            self.capture = None

    # -- requests --------------------------------------------------------------------------
    def _freeze(self) -> None:
        """Stop every process of the learner's tree until the next request: nothing of theirs
        runs while the grader is not asking (no work done ahead of a timed call, no waiting
        worker computing beside the reference). SIGSTOP cannot be caught or ignored."""
        if self.pid and self.alive:
            root, reaper = self._tree_root()
            self.frozen = signal_tree(root, signal.SIGSTOP, reaper)

    def _thaw(self) -> None:
        if self.frozen:
            for pid in self.frozen:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGCONT)
            root, _ = self._tree_root()
            signal_tree(root, signal.SIGCONT, self._reaper)
            self.frozen = []

    def _check_memory(self) -> None:
        """Between reads of the reply: the cancel button, the output limit, then the memory
        of the learner's tree (its private /tmp and /dev/shm and its memfd files counted too)
        and, every few polls, its number of processes."""
        assert self.proc is not None
        if self.cancelled():
            self.kill()
            raise Cancelled()
        printed = os.fstat(self.capture.fileno()).st_size
        if printed > limits.OUTPUT_LIMIT_BYTES:
            raise LimitExceeded("output", self._flood_message(printed))
        pid, reaper = self._tree_root()
        rss = tree_rss_mb(pid, reaper)
        self.polls += 1
        if self.polls % SHARED_EVERY == 0:
            self.shared_mb = self._shared_mb()
        self.peak_rss_mb = max(self.peak_rss_mb, rss + self.shared_mb)
        if rss + self.shared_mb > self.memory_mb:
            _process_limit(self._tree())  # a fork bomb's copies: said as what they are
            raise MemoryExceeded(rss + self.shared_mb, self.shared_mb)

    def _shared_mb(self) -> float:
        """Shared memory held by the tree (see `_check_memory`); also checks its process count
        and, under Landlock, what its temporary folder holds on disk."""
        tree = self._tree()
        _process_limit(tree)
        shared = memfd_mb(tree)
        pid = self.pid
        inner = self.proc is not None and pid != self.proc.pid  # hello received: its root
        if inner and self.mode.startswith("namespaces"):
            with contextlib.suppress(OSError):  # the namespaces' private tmpfs (/tmp, /dev/shm)
                st = os.statvfs(f"/proc/{pid}/root/tmp")
                if st.f_blocks * st.f_frsize <= (self.shm_mb + 1) << 20:  # that tmpfs, no other
                    shared += (st.f_blocks - st.f_bfree) * st.f_frsize / (1 << 20)
        held = unlinked_mb(tree, self._disk_devices()) if inner else {}
        if self.workspace_mb >= 0 and inner:
            now = folder_mb(str(self.solution.parent), limits.WATCHED_ENTRIES)
            _countable(now, "your workspace folder", limits.WATCHED_ENTRIES)
            grown = now - self.workspace_mb + held.pop(self._device(str(self.solution.parent)),
                                                       0.0)
            if grown > limits.WORKSPACE_LIMIT_MB:
                raise LimitExceeded("disk", (
                    f"your code wrote {limits.human_bytes(grown * (1 << 20))} to your "
                    f"workspace folder, over the sandbox's limit of "
                    f"{limits.WORKSPACE_LIMIT_MB} MiB — stopped"))
        if self.tmp_dir and not self.mode.startswith("namespaces"):
            used = folder_mb(self.tmp_dir, limits.TMP_WATCHED_ENTRIES)
            _countable(used, "its temporary folder", limits.TMP_WATCHED_ENTRIES)
            used += held.get(self._device(self.tmp_dir), 0.0)
            if used > self.shm_mb:
                raise LimitExceeded("memory", (
                    f"your code wrote {limits.human_bytes(used * (1 << 20))} to its temporary "
                    f"folder, over the sandbox's limit of {self.shm_mb} MiB — stopped"))
        return shared

    def _disk_devices(self) -> set[int]:
        """The file systems the learner's code may write to on disk: the workspace's (when it
        is writable) and, under Landlock, its temporary folder's (a host folder)."""
        folders = [str(self.solution.parent)] if self.workspace_mb >= 0 else []
        if self.tmp_dir and not self.mode.startswith("namespaces"):
            folders.append(self.tmp_dir)
        return {d for d in map(self._device, folders) if d >= 0}

    @staticmethod
    def _device(folder: str) -> int:
        try:
            return os.stat(folder).st_dev
        except OSError:
            return -1

    def _workspace_writable(self) -> bool:
        """Whether the child gets its workspace folder writable (see `root.build`)."""
        folder = str(self.solution.parent)
        if any(folder == c or folder.startswith(c + os.sep)
               for c in (str(REPO_ROOT), *map(str, _git_roots(REPO_ROOT)))):
            return False
        return self._entries(folder) < limits.WATCHED_ENTRIES

    @staticmethod
    def _entries(folder: str) -> int:
        count, todo = 0, [folder]
        while todo and count < limits.WATCHED_ENTRIES:
            try:
                entries = list(os.scandir(todo.pop()))
            except OSError:
                continue
            count += len(entries)
            todo.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        return count

    @property
    def _reaper(self) -> bool:
        """Under Landlock the waiter (`proc`) is the subreaper the learner's orphans reparent
        to (`lab.grader.confine`): a double-forked worker is its child, not the learner's
        process's, so the learner's tree is read from the waiter (without it). In a PID
        namespace they reparent to its init, the learner's process."""
        return self.mode.lower().startswith("landlock") and self.proc is not None

    def _tree_root(self) -> tuple[int, bool]:
        """Where the learner's tree is read from, and whether that process is the reaper."""
        if self._reaper and self.proc is not None:
            return self.proc.pid, True
        return self.pid or (self.proc.pid if self.proc is not None else 0), False

    def _tree(self) -> list[int]:
        """Every process of the learner's (see `_reaper`)."""
        root, reaper = self._tree_root()
        return process_tree(root)[1 if reaper else 0:]

    def _request_taken(self, pid: int) -> bool:
        """Whether the learner's process still waits for the request already sent: its main
        thread (the sandbox's loop) reads the request pipe, and the pipe is empty (a thread of
        the learner's read it). False when that cannot be read."""
        read = READ_SYSCALL.get(os.uname().machine)
        if read is None or self.child_rfd < 0 or self.wfd < 0:
            return False
        try:
            with open(f"/proc/{pid}/syscall", encoding="ascii") as fh:
                fields = fh.read().split()
            pending = struct.unpack("i", fcntl.ioctl(self.wfd, termios.FIONREAD, b"\0" * 4))[0]
            return (fields[0] == str(read) and int(fields[1], 16) == self.child_rfd
                    and pending == 0)
        except (OSError, ValueError, IndexError):
            return False

    def _holds_result_pipe(self, pid: int) -> bool:
        """Whether the learner's process still holds the pipe this process reads answers from
        at the number it was given (True when that cannot be read)."""
        if self.reader is None or self.child_wfd < 0 or _state(pid) in ("", "Z", "X"):
            return True
        try:
            ours = f"pipe:[{os.fstat(self.reader.fd).st_ino}]"
            return os.readlink(f"/proc/{pid}/fd/{self.child_wfd}") == ours
        except FileNotFoundError:  # that number closed: by the learner's code, or every file
            try:  # of a process on its way out (a crash: said as one)
                return not os.listdir(f"/proc/{pid}/fd")
            except OSError:
                return True
        except OSError:
            return True

    def _timed_out(self, timeout_s: float) -> ChildReply:
        """What a request with no answer says: a limit the tree passed since its last count
        first (processes, disk and shared memory are counted every 0.5 s: a fork bomb on a
        loaded machine reached the deadline first and was called an infinite loop), then the
        learner's process stopped by a signal of its own, then the timeout."""
        pid = self.pid or (self.proc.pid if self.proc is not None else 0)
        try:
            self._shared_mb()
        except LimitExceeded as exc:
            self.kill()
            return ChildReply(False, kind=exc.kind, message=exc.message)
        stopped = _state(pid) == "T"
        pipe_lost = not self._holds_result_pipe(pid)
        taken = self._request_taken(pid)
        self.kill()
        if pipe_lost:
            return ChildReply(False, kind="crash", message=PIPE_MESSAGE)
        if taken:
            return ChildReply(False, kind="protocol", message=(
                f"no answer within {timeout_s:g} s: your code read the grader's request from "
                "the sandbox's request pipe (a file descriptor it did not open), so the "
                "sandbox never saw it — leave those alone"))
        if stopped:
            return ChildReply(False, kind="timeout", message=(
                f"no answer within {timeout_s:g} s: your code stopped its own process (a "
                "SIGSTOP or SIGTSTP it sent), so it could not answer — ended"))
        return ChildReply(False, kind="timeout",
                          message=f"no answer within {timeout_s:g} s — an infinite loop? (stopped)")

    def _flood_message(self, printed: int) -> str:
        """What an output flood says: how much, and the first lines (they show what looped)."""
        self.capture.seek(0)
        head = clean_text(self.capture.read(1 << 16).decode("utf-8", errors="replace"))
        lines = [line[:200] for line in head.splitlines()[:5]]
        return (f"your code printed more than {limits.OUTPUT_LIMIT_BYTES >> 20} MiB "
                f"({limits.human_bytes(printed)} when it was stopped); the first lines were:\n"
                + "\n".join(f"  {line}" for line in lines))

    def _output(self) -> str:
        """The tail of what the learner printed during the last request (never read whole:
        a print loop can write gigabytes)."""
        end = self.capture.seek(0, os.SEEK_END)
        if not end:
            return ""
        start = max(0, end - CAPTURE_TAIL_BYTES)
        self.capture.seek(start)
        data: bytes = self.capture.read()
        if not start:
            return trim_output(clean_text(data.decode("utf-8", errors="replace")))
        data = data[data.find(b"\n") + 1:]  # from the first whole line of the tail
        self.capture.seek(0)
        total = 0  # the true count: the file is bounded by the output limit (and RLIMIT_FSIZE)
        while chunk := self.capture.read(1 << 20):
            total += chunk.count(b"\n")
        total += 0 if data.endswith(b"\n") else 1
        return trim_output(clean_text(data.decode("utf-8", errors="replace")), total)

    def request(self, msg: dict[str, Any], timeout_s: float, send: bool = True) -> ChildReply:
        """Send `msg` (unless `send` is False: wait for the child's hello) and wait for the
        reply; the round trip is measured here, so the child cannot misreport it."""
        assert self.proc is not None and self.reader is not None
        self.capture.truncate(0)  # each request's output on its own; the file never grows
        if send:
            self._thaw()
        cpu_start = tree_cpu_s(*self._tree_root()) if send else 0.0
        start = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        try:
            if send:
                protocol.send(self.wfd, msg)
            reply = self.reader.recv(deadline, poll=self._check_memory)
            elapsed = time.perf_counter() - start
            cpu = tree_cpu_s(*self._tree_root()) - cpu_start if send else 0.0
            if send:  # (a hello comes from the outer process, before the learner's pid is known)
                self._freeze()
            if not isinstance(reply, dict):
                raise protocol.FrameError(f"a reply that is not a message: {type(reply)}")
        except protocol.ChannelTimeout:
            outcome = self._timed_out(timeout_s)
        except MemoryExceeded as exc:
            self.kill()
            shared = (f", {exc.shared_mb:.0f} MiB of it shared memory (files in /tmp or "
                      "/dev/shm, memfd)") if exc.shared_mb >= 1 else ""
            outcome = ChildReply(
                False, kind="memory",
                message=f"used {exc.rss_mb:.0f} MiB{shared}, over the sandbox memory cap of "
                f"{self.memory_mb} MiB — runaway allocation? (stopped)",
            )
        except LimitExceeded as exc:
            self.kill()
            outcome = ChildReply(False, kind=exc.kind, message=exc.message)
        except (protocol.ChannelClosed, BrokenPipeError):
            if self.alive and self.pid and not self._holds_result_pipe(self.pid):
                self.kill()  # alive, but its answers now go elsewhere (dup2 over the pipe)
                outcome = ChildReply(False, kind="crash", message=PIPE_MESSAGE)
            else:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.kill()
                outcome = ChildReply(False, kind="crash",
                                     message=describe_exit(self.proc.returncode))
        except protocol.FrameError as exc:
            self.kill()
            outcome = ChildReply(
                False, kind="protocol",
                message=f"the sandbox sent garbage on its result pipe ({exc}) — "
                "did your code write to file descriptors it does not own?",
            )
        else:
            if not send:  # the hello: who runs the code, what could not be confined
                if reply.get("op") != "hello" or not isinstance(reply.get("pid"), int):
                    self.kill()
                    return ChildReply(False, kind="protocol", message="the sandbox did not start")
                if reply.get("error"):
                    self.kill()
                    return ChildReply(False, kind="sandbox", message=(
                        f"the sandbox could not confine itself ({reply['error']}); nothing of "
                        "yours ran. `dojo lab grade --unconfined` grades without a sandbox, "
                        "knowingly (see lab/README.md)"))
                self.pid = int(reply["pid"])
                self.mode = str(reply.get("mode", ""))
                self.missing = [str(m) for m in reply.get("missing", [])]
                return ChildReply(True)
            values = reply.get("values", [])
            outcome = ChildReply(
                reply.get("ok") is True,
                value=reply.get("value"),
                kind=str(reply.get("kind", "")),
                message=clean_text(limits.cut(str(reply.get("message", "")))),
                traceback=clean_text(limits.cut(str(reply.get("traceback", "")))),
                elapsed_s=elapsed,
                cpu_s=max(0.0, cpu),
                values=values if isinstance(values, list) else [],
                times=reply["times"] if isinstance(reply.get("times"), list) else [],
                seeds=reply["seeds"] if isinstance(reply.get("seeds"), list) else [],
            )
        outcome.output = self._output()
        return outcome
