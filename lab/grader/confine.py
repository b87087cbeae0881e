"""Confine the sandbox child with Linux namespaces, then drop every privilege before learner code.

`enter()` runs first thing in the sandbox process. In order (bubblewrap's, see lab/README.md):
1. unshare a user + mount + network + PID + IPC + UTS namespace (ctypes `unshare`: Python 3.11
   has no `os.unshare`);
2. set up the mounts: a private tmpfs on /dev/shm (capped; TMPDIR points there), an empty
   read-only /dev/pts (no terminal to write to), the app tree covered by an empty tmpfs with only
   what the child needs bound back (`keep`: the lab package, the interpreter's prefix, the
   workspace), the judge's files hidden behind empty mounts, every mount read-only except the
   workspace and /dev/shm;
3. fork: the fork is PID 1 of the new PID namespace and runs the learner's code, with a fresh
   /proc that shows only the sandbox's processes; when it dies, the kernel kills every process
   left in the namespace, however detached;
4. in that init: a nested user + mount namespace (the mounts above become *locked*: they cannot
   be unmounted or made writable again from inside), chdir into the workspace (no handle on a
   covered directory is left), every capability dropped (bounding and ambient sets too, secure
   bits locked), `no_new_privs`, and a seccomp filter (libseccomp through `pyseccomp`) that
   refuses with EPERM the calls that could undo or escape the confinement (mount, umount2,
   pivot_root, chroot, unshare/setns and namespace clones, ptrace, process_vm_readv/writev,
   keyctl, bpf, perf_event_open, userfaultfd, open_by_handle_at, kexec, personality...).
The outer process ("waiter") only waits and mirrors the exit status; it is made non-dumpable and
drops its capabilities too, so nothing the learner can reach holds more rights than the learner.

Once the namespaces exist, any step that fails is a `ConfinementError` (grading stops and says
so), never a silent weakening. Only what this machine cannot offer at all (no user namespaces,
not Linux, no libseccomp) is named in `missing`, and the grader prints one line about it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                   CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_READ, PR_CAPBSET_DROP = 1, 4, 23, 24
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 28, 38, 47, 4
PR_CAP_AMBIENT_IS_SET, PR_SET_CHILD_SUBREAPER = 1, 36
# SECBIT_NOROOT, _NO_SETUID_FIXUP, _KEEP_CAPS, _NO_CAP_AMBIENT_RAISE (bits 0, 2, 4, 6) unset or
# set as below, each with its _LOCKED bit: uid 0 gains nothing on exec, nothing can be unlocked
SECURE_BITS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7)
LINUX_CAPABILITY_VERSION_3 = 0x20080522
_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                 "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
                 "strictatime": MS_STRICTATIME}

# calls refused with EPERM once the learner's code may run: each could undo the confinement,
# reach another process, or widen the kernel's attack surface (bubblewrap/nsjail/docker lists)
DENIED_SYSCALLS = (
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "mount_setattr", "unshare", "setns", "ptrace", "process_vm_readv",
    "process_vm_writev", "kcmp", "pidfd_getfd", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "open_by_handle_at", "name_to_handle_at", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "lookup_dcookie", "syslog", "iopl", "ioperm", "uselib",
    "vhangup", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname",
)
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
PERSONALITY_QUERY = 0xFFFFFFFF

# what each protection is called in the one-line notice when it is missing
PROTECTIONS = ("pid namespace (every process killed at the end)", "no network",
               "read-only app tree and data dir", "private /dev/shm",
               "judge files hidden", "private /proc", "no capabilities (mounts locked)",
               "seccomp filter")
SECCOMP_MISSING = "seccomp filter (pyseccomp or libseccomp2 not installed)"


class ConfinementError(OSError):
    """A confinement step failed after the namespaces were created: grading must stop."""


@dataclass
class Confinement:
    missing: list[str] = field(default_factory=list)
    outer_pid: int = 0  # the pid the grader sees for the process that runs the learner's code
    waiter: bool = False  # True in the outer process, which only waits (see _fork_init)
    error: str = ""  # set in the waiter when the init's own steps failed (ConfinementError)


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


def _map_ids(uid: int, gid: int) -> None:
    """Map our ids onto themselves in a user namespace we just created."""
    with contextlib.suppress(FileNotFoundError):  # kernels before 3.19 have no setgroups file
        _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _unshare(libc: ctypes.CDLL) -> bool:
    """New user+mount+net+pid+ipc+uts namespaces (without the user one when we are root and
    user namespaces are off)."""
    uid, gid = os.getuid(), os.getgid()
    others = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    try:
        _call(libc.unshare, CLONE_NEWUSER | others)
    except OSError:
        try:
            _call(libc.unshare, others)
        except OSError:
            return False
        return True
    _map_ids(uid, gid)
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


def _mounts() -> dict[str, tuple[int, bool]]:
    """Mount point -> (per-mount flags to keep, read-only), from mountinfo. Where mounts are
    stacked on one point, the last listed (the one on top, the only one reachable) wins."""
    out: dict[str, tuple[int, bool]] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            flags = 0
            options = parts[5].split(",")
            for opt in options:
                flags |= _OPTION_FLAGS.get(opt, 0)
            out[point] = (flags, "ro" in options)
    return out


def _read_only(libc: ctypes.CDLL, keep: set[str]) -> None:
    """Remount every mount read-only except those in `keep`. /proc's mounts are skipped: a
    fresh /proc is mounted over them in the init. Any other mount left writable is an error."""

    def writable() -> dict[str, int]:
        return {point: flags for point, (flags, read_only) in _mounts().items()
                if not read_only and point not in keep
                and not (point == "/proc" or point.startswith("/proc/"))}

    why: dict[str, str] = {}
    unreachable: set[str] = set()
    for point, flags in writable().items():
        try:
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except FileNotFoundError:
            unreachable.add(point)  # stacked under a later mount (a hidden folder): no path
        except OSError as exc:
            why[point] = exc.strerror or str(exc)
    left = [p for p in writable() if p not in unreachable]
    if left:
        raise ConfinementError(errno.EPERM, "mounts left writable: " + ", ".join(
            f"{p} ({why[p]})" if p in why else p for p in left))


def _hide(libc: ctypes.CDLL, paths: list[str]) -> None:
    for path in paths:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
        elif os.path.exists(path):
            _mount(libc, "/dev/null", path, None, MS_BIND)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _cover(libc: ctypes.CDLL, folder: str, keep: list[str]) -> None:
    """Cover `folder` with an empty tmpfs and bind back only the paths in `keep` under it.
    Each kept path is opened (O_PATH) before the cover and bound from its descriptor, so it is
    the original that comes back, not whatever the empty tmpfs has under that name."""
    wanted = {p for p in keep if _inside(p, folder) and os.path.exists(p)}
    kept = sorted((p for p in wanted if not any(q != p and _inside(p, q) for q in wanted)),
                  key=lambda p: p.count(os.sep))  # a path inside another kept one comes along
    handles = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in kept]
    try:
        _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for path, fd in handles:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if not os.path.exists(path):
                    with open(path, "w", encoding="ascii"):
                        pass
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    finally:
        for _, fd in handles:
            os.close(fd)


def _seccomp_filter() -> Any:
    """The filter to load in the init (built here, before any namespace: it reads the library),
    or None when pyseccomp/libseccomp cannot be had on this machine."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, AttributeError):
        return None
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED_SYSCALLS:
        with contextlib.suppress(ValueError, OSError):  # not a syscall on this architecture
            flt.add_rule(deny, name)
    for flag in NAMESPACE_FLAGS:  # clone() that would create a namespace
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, which a filter cannot read: ENOSYS makes glibc fall
    # back to clone(), which the rules above check (what container runtimes do)
    with contextlib.suppress(ValueError, OSError):
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for request in (TIOCSTI, TIOCLINUX):  # typing into a terminal, were one reachable
        flt.add_rule(deny, "ioctl", sc.Arg(1, sc.EQ, request))
    flt.add_rule(deny, "personality", sc.Arg(0, sc.NE, PERSONALITY_QUERY))
    return flt


def _capabilities_left(libc: ctypes.CDLL, last: int) -> list[str]:
    """Which capability sets still hold anything (capget and prctl: the waiter cannot read its
    own /proc/self, the init's fresh /proc does not list it)."""
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _call(libc.capget, ctypes.byref(header), ctypes.byref(data))
    left = [name for name, i in (("effective", 0), ("permitted", 1), ("inheritable", 2))
            if data[i] or data[i + 3]]
    if any(libc.prctl(PR_CAPBSET_READ, ctypes.c_ulong(cap), 0, 0, 0) == 1
           for cap in range(last + 1)):
        left.append("bounding")
    if any(libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_IS_SET),
                      ctypes.c_ulong(cap), 0, 0) == 1 for cap in range(last + 1)):
        left.append("ambient")
    return left


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """Lock the secure bits, empty the bounding and ambient sets, then every set (capset);
    checked against /proc/self/status."""
    _call(libc.prctl, PR_SET_SECUREBITS, ctypes.c_ulong(SECURE_BITS), 0, 0, 0)
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _call(libc.prctl, PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)
    _call(libc.prctl, PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _call(libc.capset, ctypes.byref(header), ctypes.byref(data))
    left = _capabilities_left(libc, last)
    if left:
        raise ConfinementError(errno.EPERM, f"capabilities left in {', '.join(left)}")


def _no_new_privs(libc: ctypes.CDLL) -> None:
    _call(libc.prctl, PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0)


def enter(workspace: str, hide: list[str], shm_mb: int, cover: list[str] | None = None,
          keep: list[str] | None = None) -> Confinement:
    """Confine this process; returns in the process that should run the learner's code (and,
    with `waiter=True`, in the outer one). Raises ConfinementError when a step fails."""
    result = Confinement(outer_pid=os.getpid())
    if not sys.platform.startswith("linux"):
        result.missing = list(PROTECTIONS)
        return result
    libc = _libc()
    flt = _seccomp_filter()
    if flt is None:
        result.missing.append(SECCOMP_MISSING)
    if not _unshare(libc):
        result.missing = list(PROTECTIONS)
        return result
    _loopback_up()
    workspace = os.path.realpath(workspace)
    step = "making the mounts private"
    try:
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        step = "a private /dev/shm"
        _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={max(1, shm_mb)}m,mode=1777")
        os.environ["TMPDIR"] = "/dev/shm"
        step = "no /dev/pts"
        if os.path.isdir("/dev/pts"):
            _mount(libc, "tmpfs", "/dev/pts", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                   "size=4k,mode=755")
        if os.path.exists("/dev/ptmx"):
            _mount(libc, "/dev/null", "/dev/ptmx", None, MS_BIND)
        step = "covering the app tree"
        for folder in cover or []:
            _cover(libc, os.path.realpath(folder), [*(keep or []), workspace])
        step = "hiding the judge's files"
        _hide(libc, hide)
        step = "a writable workspace"
        _mount(libc, workspace, workspace, None, MS_BIND | MS_REC)
        step = "read-only mounts"
        _read_only(libc, {workspace, "/dev/shm"})
    except OSError as exc:
        raise ConfinementError(exc.errno or errno.EPERM, f"{step}: {exc.strerror or exc}") \
            from exc
    return _fork_init(libc, result, workspace, flt)


def _lock_init(libc: ctypes.CDLL, workspace: str, flt: Any, missing: list[str]) -> None:
    """The init's own steps, in order, before any learner code (see the module docstring)."""
    step = "a private /proc"
    try:
        with contextlib.suppress(OSError):
            _call(libc.prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        step = "a nested user namespace (locked mounts)"
        uid, gid = os.getuid(), os.getgid()
        try:
            _call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNS)
        except OSError:
            # no user namespaces here (root in a container that forbids them): the mounts are
            # not locked, but with every capability dropped and mount calls filtered they
            # cannot be undone either; said in the grading's notice
            missing.append(PROTECTIONS[6])
        else:
            _map_ids(uid, gid)
        os.chdir(workspace)  # no handle on a covered directory stays open
        step = "dropping capabilities"
        _drop_capabilities(libc)
        step = "no_new_privs"
        _no_new_privs(libc)
        if flt is not None:
            step = "the seccomp filter"
            flt.load()
    except OSError as exc:
        raise ConfinementError(exc.errno or errno.EPERM, f"{step}: {exc.strerror or exc}") \
            from exc


def _fork_init(libc: ctypes.CDLL, result: Confinement, workspace: str,
               flt: Any) -> Confinement:
    """Fork the PID-namespace init that runs the learner's code. It confines itself, then tells
    the outer process (over a pipe) that it is ready or why not; the outer process returns with
    `waiter=True`: it reports `outer_pid` (and `error`) to the grader, then `wait_and_mirror()`."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        missing: list[str] = []
        try:
            _lock_init(libc, workspace, flt, missing)
        except Exception as exc:  # any failure here must stop the grading
            os.write(ready_w, ("!" + str(exc)).encode()[:4000])
            os._exit(1)
        os.write(ready_w, "".join(f"{m}\n" for m in missing).encode())
        os.close(ready_w)
        result.missing.extend(missing)
        return result
    os.close(ready_w)
    # the waiter: nothing of the learner's may open its memory, and it holds no capability
    _call(libc.prctl, PR_SET_DUMPABLE, 0, 0, 0, 0)
    chunks = []
    while chunk := os.read(ready_r, 4096):
        chunks.append(chunk)
    os.close(ready_r)
    said = b"".join(chunks).decode(errors="replace")
    error = said[1:] if said.startswith("!") else ""
    result.missing.extend(line for line in ([] if error else said.splitlines()) if line)
    if not error:
        try:
            _drop_capabilities(libc)
            _no_new_privs(libc)
        except OSError as exc:
            error = f"the outer process: {exc}"
    return Confinement(list(result.missing), outer_pid=pid, waiter=True, error=error)


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


def set_child_subreaper() -> None:
    """Orphans of this process's descendants reparent to it (not to the host's init)."""
    if sys.platform.startswith("linux"):
        _call(_libc().prctl, PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), 0, 0, 0)


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


def main(argv: list[str]) -> None:
    """python -m lab.grader.confine WORKSPACE [COVER...]: print what is missing (JSON), or the
    error (exit status 3) when a step fails."""
    import json

    try:
        state = enter(argv[0], [], 16, cover=argv[1:])
    except ConfinementError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        os._exit(3)
    if state.waiter:
        if state.error:
            print(json.dumps({"error": state.error}), flush=True)
            os._exit(3)
        wait_and_mirror(state.outer_pid)
    print(json.dumps(state.missing), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
