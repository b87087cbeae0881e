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
   keyctl, bpf, perf_event_open, userfaultfd, open_by_handle_at, kexec, personality, io_uring...).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.grader.root import RootSpec

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
    # io_uring's operations (openat, socket, connect...) never pass through a seccomp filter:
    # with it the socket rules below could be walked around
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)
# the sockets the learner's code may create under Landlock, which has no network namespace
AF_INET, AF_INET6, AF_NETLINK = 2, 10, 16
SOCK_STREAM, SOCK_DGRAM, SOCK_TYPE_MASK = 1, 2, 0xF
IPPROTO_TCP = 6
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
    mode: str = ""  # which confinement runs: NAMESPACES, LANDLOCK or UNCONFINED


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


NEWROOT = "/tmp"  # the new root's tmpfs is mounted over it, in this mount namespace only
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}
MNT_DETACH = 2
# statvfs's per-mount flags -> the mount flags a bind remount must keep (locked in a userns)
_ST_TO_MS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
             (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
             (os.ST_RELATIME, MS_RELATIME))


def _kept_flags(path: str) -> int:
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS if flags & st)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _bind(libc: ctypes.CDLL, fd: int, target: str, *, writable: bool, device: bool = False
          ) -> None:
    """Bind the file or folder open as `fd` at `target` (created in the new root), read-only
    unless `writable`, never setuid, device nodes only where `device`."""
    source = f"/proc/self/fd/{fd}"
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            with open(target, "w", encoding="ascii"):
                pass
    _mount(libc, source, target, None, MS_BIND)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | _kept_flags(source)
    flags |= 0 if device else MS_NODEV
    flags |= 0 if writable else MS_RDONLY
    _mount(libc, None, target, None, flags)


def _open_sources(paths: list[str], masks: list[str] | None = None) -> list[tuple[str, int]]:
    """O_PATH handles on the paths to bind, taken before the new root hides the host's view
    (a path that is gone is skipped; shallower paths first, and a path inside another one
    comes along with it, unless a mask hides it there)."""
    out: list[tuple[str, int]] = []
    for path in sorted(dict.fromkeys(paths), key=lambda p: (p.count(os.sep), p)):
        if any(_inside(path, kept) for kept, _ in out) and not any(
                _inside(path, m) for m in masks or []):
            continue
        try:
            out.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC)))
        except OSError:
            continue
    return out


def build_root(libc: ctypes.CDLL, spec: RootSpec) -> None:
    """Make the allow-list root (`lab.grader.root`) this mount namespace's `/`: an empty tmpfs,
    the `read` paths bound read-only, the `write` paths writable, a private size-limited /tmp
    (also /dev/shm), a /dev with only the listed nodes, then pivot_root into it and detach the
    host's tree (nothing of it can be named any more)."""
    reads = _open_sources(spec.read, spec.masks)
    masked = [(p, fd) for p, fd in reads if any(_inside(p, m) for m in spec.masks)]
    writes = _open_sources(spec.write)
    for path in spec.write:  # the workspace: skipped, nothing of the learner's could run
        if not any(_inside(path, kept) for kept, _ in writes):
            try:
                os.close(os.open(path, os.O_PATH))
            except OSError as exc:
                raise OSError(exc.errno, (
                    f"your workspace folder {path} cannot be opened from the sandbox "
                    f"({exc.strerror}): a folder on its path is closed to it, where even root "
                    "has no rights over other users' files — grade a file in a folder your "
                    "user owns")) from exc
    devices = _open_sources(spec.devices)
    try:
        _mount(libc, "tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        # the private /tmp first: a workspace under the host's /tmp is bound on top of it
        os.makedirs(NEWROOT + "/tmp", exist_ok=True)
        _mount(libc, "tmpfs", NEWROOT + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={max(1, spec.tmp_mb)}m,mode=1777")
        for path, fd in reads:
            if (path, fd) not in masked:
                _bind(libc, fd, NEWROOT + path, writable=False)
        masks = [m for m in spec.masks if os.path.isdir(NEWROOT + m)]
        for mask in masks:  # an installed copy of the app, other environments: empty
            _mount(libc, "tmpfs", NEWROOT + mask, "tmpfs", MS_NOSUID | MS_NODEV,
                   "size=4k,mode=755")
        for path, fd in masked:  # an allowed distribution inside a masked folder
            _bind(libc, fd, NEWROOT + path, writable=False)
        for mask in masks:
            _mount(libc, None, NEWROOT + mask, None,
                   MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=755")
        for path, fd in writes:
            _bind(libc, fd, NEWROOT + path, writable=True)
        for path, target in spec.links:
            os.makedirs(os.path.dirname(NEWROOT + path), exist_ok=True)
            os.symlink(target, NEWROOT + path)
        dev = NEWROOT + "/dev"
        os.makedirs(dev + "/shm", exist_ok=True)
        for path, fd in devices:
            _bind(libc, fd, NEWROOT + path, writable=True, device=True)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
            os.symlink(target, f"{dev}/{name}")
        _mount(libc, NEWROOT + "/tmp", dev + "/shm", None, MS_BIND)
        os.makedirs(NEWROOT + "/proc", exist_ok=True)
        # this PID namespace's own /proc, mounted while the host's is still visible (the kernel
        # allows a new proc mount in a user namespace only beside a fully visible one)
        _mount(libc, "proc", NEWROOT + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    finally:
        for _, fd in (*reads, *writes, *devices):
            os.close(fd)
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root: unknown architecture {os.uname().machine}")
    os.chdir(NEWROOT)
    _call(libc.syscall, ctypes.c_long(number), b".", b".")
    _call(libc.umount2, b".", MNT_DETACH)  # the host's tree, now stacked under the new root
    os.chdir("/")
    _mount(libc, None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)

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
    checked against /proc/self/status. Nothing to do for a process that holds none (an
    unprivileged learner without namespaces: changing the secure bits or the bounding set would
    need one, and with no_new_privs the bounding set grants nothing)."""
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
        if set(_capabilities_left(libc, int(f.read()))) <= {"bounding"}:
            return
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


NAMESPACES = "namespaces + seccomp"
LANDLOCK = "Landlock + seccomp"
UNCONFINED = "unconfined, at your request"
NOTHING_HERE = ("neither user namespaces nor Landlock can confine the grading on this machine "
                "({why}); nothing of yours ran. `dojo lab grade --unconfined` runs your code "
                "without a sandbox, knowingly (the attempt is recorded as unconfined)")


def enter(spec: RootSpec, workspace: str, *, network: bool = False) -> Confinement:
    """Confine this process; returns in the process that should run the learner's code (and,
    with `waiter=True`, in the outer one). Namespaces first (the allow-list root), Landlock with
    the same allow-list where they are denied; neither is a ConfinementError (the grading
    refuses to run unconfined unless the learner asked for it)."""
    result = Confinement(outer_pid=os.getpid())
    if not sys.platform.startswith("linux"):
        raise ConfinementError(errno.ENOSYS, NOTHING_HERE.format(why=f"{sys.platform}"))
    libc = _libc()
    flt = _seccomp_filter()
    if flt is None:
        result.missing.append(SECCOMP_MISSING)
    workspace = os.path.realpath(workspace)
    if _unshare(libc):
        result.mode = NAMESPACES if flt is not None else "namespaces"
        _loopback_up()
        try:
            _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        except OSError as exc:
            raise ConfinementError(exc.errno or errno.EPERM,
                                   f"making the mounts private: {exc.strerror or exc}") from exc
        _private_env("/tmp")
        return _fork_init(libc, result, spec, workspace, flt)
    from lab.grader import landlock

    abi = landlock.abi_version()
    if abi >= 1:
        result.mode = LANDLOCK if flt is not None else "Landlock"
        return _fork_landlocked(libc, result, spec, workspace, flt, network)
    raise ConfinementError(errno.EPERM, NOTHING_HERE.format(
        why="user namespaces denied, Landlock not in this kernel"))


def _private_env(tmp: str) -> None:
    """Temporary files and caches go to the private temporary folder (HOME is not there)."""
    os.environ["TMPDIR"] = tmp
    os.environ["HOME"] = tmp



def _lock_init(libc: ctypes.CDLL, spec: RootSpec, workspace: str, flt: Any,
               missing: list[str]) -> None:
    """The init's own steps, in order, before any learner code (see the module docstring)."""
    step = "a mount namespace of its own"
    try:
        with contextlib.suppress(OSError):
            _call(libc.prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _call(libc.unshare, CLONE_NEWNS)  # the waiter keeps the host's view; this one pivots
        step = "building the allow-list root"
        build_root(libc, spec)
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
        step = "entering the workspace folder"
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


def _fork_init(libc: ctypes.CDLL, result: Confinement, spec: RootSpec, workspace: str,
               flt: Any) -> Confinement:
    """Fork the PID-namespace init that runs the learner's code (see `_fork_confined`)."""
    return _fork_confined(libc, result, lambda missing: _lock_init(libc, spec, workspace, flt,
                                                                   missing))


def _fork_landlocked(libc: ctypes.CDLL, result: Confinement, spec: RootSpec, workspace: str,
                     flt: Any, network: bool) -> Confinement:
    """No namespaces: the outer process becomes a subreaper (every orphan of the learner's
    stays in its tree, which the grader counts, stops and kills) and forks the process that
    runs the learner's code under Landlock (the same allow-list, the private temporary folder
    writable), no_new_privs and the seccomp filter. The outer one stays outside the Landlock
    domain: from ABI 6 the learner's code cannot signal it (nor the grader, nor the app)."""
    from lab.grader import landlock

    set_child_subreaper()
    tmp = spec.tmp_dir or workspace
    if flt is not None:
        landlock_sockets(flt, network)

    def lock(missing: list[str]) -> None:
        step = "no_new_privs"
        try:
            with contextlib.suppress(OSError):
                _call(libc.prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            _no_new_privs(libc)
            step = "Landlock"
            allowed = RootSpec(**{**vars(spec), "write": [*spec.write, tmp]})
            if landlock.restrict(allowed, network=network) < 6:
                missing.append("signal scoping (Landlock ABI 6)")
            os.chdir(workspace)
            _private_env(tmp)
            importable_only_if_readable()
            if flt is not None:
                step = "the seccomp filter"
                flt.load()
        except OSError as exc:
            raise ConfinementError(exc.errno or errno.EPERM,
                                   f"{step}: {exc.strerror or exc}") from exc

    return _fork_confined(libc, result, lock)


def landlock_sockets(flt: Any, network: bool) -> None:
    """Under Landlock the sockets the learner's code may create are an allow-list: TCP over
    IPv4 and IPv6 (which Landlock refuses, or lets reach the ranks' loopback with `network`:
    then any IP socket and netlink, for gloo) and connected pairs of Unix sockets. Landlock
    does not check a connect() to a Unix socket file: any socket of that family could reach
    every one the user can (a tmux server, an SSH agent, the session bus: commands run outside
    the sandbox), and so could a datagram pair sending to an address."""
    import pyseccomp as sc

    deny = sc.ERRNO(errno.EPERM)
    _refuse_but(flt, deny, "socket", 0, (AF_INET, AF_INET6, AF_NETLINK) if network
                else (AF_INET, AF_INET6))
    if not network:
        for kind in range(SOCK_TYPE_MASK + 1):
            if kind != SOCK_STREAM:
                flt.add_rule(deny, "socket", sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))
        _refuse_but(flt, deny, "socket", 2, (0, IPPROTO_TCP))
    flt.add_rule(deny, "socketpair", sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM))


def _refuse_but(flt: Any, deny: Any, call: str, arg: int, allowed: tuple[int, ...]) -> None:
    """Refuse `call` unless its argument `arg` is one of `allowed` (rules OR together)."""
    import pyseccomp as sc

    low, high = min(allowed), max(allowed)
    if low > 0:
        flt.add_rule(deny, call, sc.Arg(arg, sc.LT, low))
    flt.add_rule(deny, call, sc.Arg(arg, sc.GT, high))
    for value in range(low + 1, high):
        if value not in allowed:
            flt.add_rule(deny, call, sc.Arg(arg, sc.EQ, value))


def importable_only_if_readable() -> None:
    """Under Landlock the folders on sys.path can be listed but not every module in them read:
    a package there that is not allowed (psutil beside transformers) must look absent, as in the
    namespaces' root, not found and then fail to open (libraries probe optional packages with
    `find_spec` and catch only ImportError). Python's path finder is replaced by one that
    checks the module can be opened."""
    import importlib.machinery

    class ReadablePathFinder(importlib.machinery.PathFinder):
        @classmethod
        def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> Any:
            spec = super().find_spec(fullname, path, target)
            if spec is not None and spec.has_location and spec.origin:
                try:
                    os.close(os.open(spec.origin, os.O_RDONLY | os.O_CLOEXEC))
                except PermissionError:
                    return None
            return spec

    sys.meta_path[:] = [ReadablePathFinder if f is importlib.machinery.PathFinder else f
                        for f in sys.meta_path]
    sys.path_importer_cache.clear()


def _fork_confined(libc: ctypes.CDLL, result: Confinement,
                   lock: Callable[[list[str]], None]) -> Confinement:
    """Fork the process that runs the learner's code; it runs `lock` (its confinement), then
    tells the outer process (over a pipe) that it is ready or why not; the outer process
    returns with `waiter=True`: it reports `outer_pid` (and `error`) to the grader, then
    `wait_and_mirror()`."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        missing: list[str] = []
        try:
            lock(missing)
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
    return Confinement(list(result.missing), outer_pid=pid, waiter=True, error=error,
                       mode=result.mode)


def descendants(pid: int) -> list[int]:
    """Every process descending from `pid` (its threads' children files, recursively)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as fh:
                    found = [int(c) for c in fh.read().split()]
            except (OSError, ValueError):
                continue
            out.extend(found)
            todo.extend(found)
    return out


def kill_descendants() -> None:
    """SIGKILL every process below this one (again until none is left: a fork in between) and
    reap them. SIGKILL ends stopped processes too."""
    for _ in range(50):
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass


def watch_lifeline(fd: int) -> None:
    """A thread that ends every process below this one, then this one, once the grader's end
    of the `fd` pipe closes (the grader exited, was killed, or closed the sandbox)."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 64):
                pass
        kill_descendants()
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="lifeline").start()


def wait_and_mirror(pid: int, lifeline: int = -1) -> None:
    """The outer process: wait for the process running the learner's code (the namespace's
    init, or the Landlocked one), end whatever it left behind (orphans reparent here), and exit
    the same way. Once the grader is gone (`lifeline` closed), everything is killed at once.
    (No thread here: after unshare(CLONE_NEWPID) this process cannot start one.)"""
    import select

    if lifeline >= 0:
        poller = select.poll()
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
        poller.register(lifeline, select.POLLIN | select.POLLHUP)
        while True:
            try:
                ready = dict(poller.poll())
            except InterruptedError:
                continue
            if pidfd in ready:
                break
            if lifeline in ready:
                with contextlib.suppress(OSError):
                    if os.read(lifeline, 64):
                        continue
                kill_descendants()
                os._exit(1)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    kill_descendants()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set: it is
            signal.signal(sig, signal.SIG_DFL)  # default already (a SIGKILL was mirrored as
        with contextlib.suppress(OSError):  # exit status 1: "os._exit?", not "SIGKILL")
            os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def set_child_subreaper() -> None:
    """Orphans of this process's descendants reparent to it (not to the host's init)."""
    if sys.platform.startswith("linux"):
        _call(_libc().prctl, PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), 0, 0, 0)


def probe_here() -> dict[str, Any]:
    """Which confinement a grading gets on this machine: {"mode", "missing"} or {"error"}
    (runs a throwaway child to find out)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as ws:
        out = subprocess.run([sys.executable, "-m", "lab.grader.confine", ws],
                             capture_output=True, text=True, timeout=60, check=False)
    try:
        found = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": out.stderr[-2000:] or "the probe printed nothing"}
    return found if isinstance(found, dict) else {"error": str(found)}


def missing_here() -> list[str]:
    """What a confined grading lacks on this machine (everything, when none can be had)."""
    found = probe_here()
    if "error" in found:
        return list(PROTECTIONS)
    return [str(m) for m in found.get("missing", [])]


def main(argv: list[str]) -> None:
    """python -m lab.grader.confine WORKSPACE [SPEC]: print which confinement a grading gets
    here ({"mode", "missing"}, JSON), or the error (exit status 3) when a step fails. SPEC (a
    RootSpec as JSON) replaces the allow-list built for WORKSPACE (tests of a failing step)."""
    import json

    from lab.grader import root

    spec = root.build(allowed={}, solution=os.path.join(argv[0], "probe.py"), needs_torch=False,
                      trusted=False, gpu=False, tmp_mb=16, checkout=[str(root.REPO_ROOT)],
                      data=argv[0] + "-no-data")
    if len(argv) > 1:
        spec = RootSpec.from_json(argv[1])
    try:
        state = enter(spec, argv[0])
    except ConfinementError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        os._exit(3)
    if state.waiter:
        if state.error:
            print(json.dumps({"error": state.error}), flush=True)
            os._exit(3)
        wait_and_mirror(state.outer_pid)
    print(json.dumps({"mode": state.mode, "missing": state.missing}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
