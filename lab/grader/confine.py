"""Confine the sandbox child with Linux namespaces where the kernel allows it (no new deps).

`enter()` runs first thing in the sandbox process. It unshares a user + mount + network + PID
namespace (ctypes `unshare`: Python 3.11 has no `os.unshare`), makes every mount read-only except
the learner's workspace folder, mounts a small private tmpfs on /dev/shm (capped, and TMPDIR points
there), hides the judge's files (the reference, the exercise's grading modules) behind empty
mounts, then forks: the fork is PID 1 of the new PID namespace and runs the learner's code, with a
fresh /proc that shows only the sandbox's processes. When it dies — or the grader kills it — the
kernel kills every process left in the namespace, however detached. The outer process only waits
and mirrors the exit status.

Whatever cannot be set up is named in `missing`, and the grader prints one line about it; the
rest (process-group and token kills, the signal audit hook, the RSS poll) works everywhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
PR_SET_PDEATHSIG = 1
_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                 "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
                 "strictatime": MS_STRICTATIME}

# what each protection is called in the one-line notice when it is missing
PROTECTIONS = ("pid namespace (every process killed at the end)", "no network",
               "read-only app tree and data dir", "private /dev/shm",
               "judge files hidden", "private /proc")


@dataclass
class Confinement:
    missing: list[str] = field(default_factory=list)
    outer_pid: int = 0  # the pid the grader sees for the process that runs the learner's code
    waiter: bool = False  # True in the outer process, which only waits (see _fork_init)
    ready_fd: int = -1

    def release(self) -> None:
        """Let the namespace's init start (after the grader has been told its pid)."""
        if self.ready_fd >= 0:
            os.close(self.ready_fd)
            self.ready_fd = -1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(fn: object, *args: object) -> None:
    if fn(*args) != 0:  # type: ignore[operator]
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _enc(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None,
           flags: int, data: str | None = None) -> None:
    _call(libc.mount, _enc(source), _enc(target), _enc(fstype), ctypes.c_ulong(flags),
          _enc(data))


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _unshare(libc: ctypes.CDLL) -> bool:
    """New user+mount+net+pid namespaces (without the user one when we are already root)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        _call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
    except OSError:
        try:
            _call(libc.unshare, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
        except OSError:
            return False
        return True
    with contextlib.suppress(OSError):
        _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return True


def _loopback_up() -> None:
    """Bring up `lo` in the new network namespace (it starts down): processes of one sandbox can
    then talk to each other over 127.0.0.1 (the tensor-parallel lab's ranks), while nothing
    outside the namespace — not even the host's loopback — can be reached. Best effort: needs
    CAP_NET_ADMIN in the namespace, which the user namespace gives until the exec'd code runs."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags,
                                                  struct.pack("16sh", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def _mounts() -> list[tuple[str, int]]:
    """(mount point, per-mount flags to keep) from /proc/self/mountinfo, outermost first."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            flags = 0
            for opt in parts[5].split(","):
                flags |= _OPTION_FLAGS.get(opt, 0)
            out.append((point, flags))
    return out


def _read_only(libc: ctypes.CDLL, keep: set[str]) -> None:
    """Remount every mount read-only except those in `keep` (keeping locked flags)."""
    for point, flags in _mounts():
        if point in keep:
            continue
        with contextlib.suppress(OSError):  # e.g. a mount we cannot see into
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    still = [p for p, _ in _mounts() if p == "/"]
    if still:
        probe = Path("/") / f".dojo-ro-probe-{os.getpid()}"
        try:
            probe.touch()
        except OSError:
            return
        probe.unlink()
        raise OSError("the root mount is still writable")


def _hide(libc: ctypes.CDLL, paths: list[str]) -> None:
    for path in paths:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
        elif os.path.exists(path):
            _mount(libc, "/dev/null", path, None, MS_BIND)


def enter(workspace: str, hide: list[str], shm_mb: int) -> Confinement:
    """Confine this process; returns in the process that should run the learner's code."""
    result = Confinement(outer_pid=os.getpid())
    if not sys.platform.startswith("linux"):
        result.missing = list(PROTECTIONS)
        return result
    libc = _libc()
    if not _unshare(libc):
        result.missing = list(PROTECTIONS)
        return result
    _loopback_up()
    try:
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    except OSError:
        result.missing = [p for p in PROTECTIONS if p.startswith(("read-only", "private /dev",
                                                                  "judge", "private /proc"))]
    else:
        _filesystem(libc, workspace, hide, shm_mb, result.missing)
    return _fork_init(libc, result)


def _filesystem(libc: ctypes.CDLL, workspace: str, hide: list[str], shm_mb: int,
                missing: list[str]) -> None:
    try:
        _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={max(1, shm_mb)}m,mode=1777")
        os.environ["TMPDIR"] = "/dev/shm"
    except OSError:
        missing.append(PROTECTIONS[3])
    try:
        _hide(libc, hide)
    except OSError:
        missing.append(PROTECTIONS[4])
    try:
        _mount(libc, workspace, workspace, None, MS_BIND | MS_REC)
        _read_only(libc, {workspace, "/dev/shm"})
    except OSError:
        missing.append(PROTECTIONS[2])


def _fork_init(libc: ctypes.CDLL, result: Confinement) -> Confinement:
    """Fork the PID-namespace init that runs the learner's code. In the outer process the result
    has `waiter=True`: it must report `outer_pid`, call `release()`, then `wait_and_mirror()`."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_w)
        os.read(ready_r, 1)  # wait until the outer process has told the grader our pid
        os.close(ready_r)
        with contextlib.suppress(OSError):
            _call(libc.prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        try:
            _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError:
            result.missing.append(PROTECTIONS[5])
        return result
    os.close(ready_r)
    return Confinement(list(result.missing), outer_pid=pid, waiter=True, ready_fd=ready_w)


def wait_and_mirror(pid: int) -> None:
    """The outer process: wait for the namespace's init and exit the same way."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def missing_here() -> list[str]:
    """What `enter()` cannot set up on this machine (runs a throwaway child to find out)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as ws:
        out = subprocess.run([sys.executable, "-m", "lab.grader.confine", ws],
                             capture_output=True, text=True, timeout=60, check=False)
    try:
        return [str(m) for m in json.loads(out.stdout.strip().splitlines()[-1])]
    except (ValueError, IndexError):
        return list(PROTECTIONS)


if __name__ == "__main__":  # python -m lab.grader.confine WORKSPACE: print what is missing
    import json

    state = enter(sys.argv[1], [], 16)
    if state.waiter:
        state.release()
        wait_and_mirror(state.outer_pid)
    print(json.dumps(state.missing), flush=True)
    os._exit(0)
