"""Temporary folders a grading owns, named for the process that owns them, and the sweep that
removes those whose owner is gone.

A grader removes its folders itself when it ends normally, on an exception or on a signal it
can catch (`lab.grader.stops`); SIGKILL leaves no chance. So each folder's name carries its
owner's pid, start time and PID namespace (`dojo-sandbox-<pid>-<start>-<ns>-XXXXXXXX`): the
next grading (any user's, any checkout's) removes the folders whose owner is no longer that same
process, and never one whose owner still runs. The start time tells a reused pid apart from the
owner; a folder from another PID namespace (a container sharing the folder) is left alone.

A folder is also removed when its process exits (normally, on an exception, or on SIGTERM or
SIGHUP through `lab.grader.stops`), whichever object made it: `make` records it, and the first
`make` registers the exit handler that removes every folder still recorded. From that moment on
`make` refuses, so a thread still preparing a child while the process exits (`dojo lab serve`
stopped during a prepare) cannot leave a folder made after the handler ran.

Folders named before owners were recorded (`dojo-sandbox-XXXXXXXX`) are removed only when no
live process names them in its command line or environment (a sandbox child carries its
folder in its `--root` argument, a Triton cache in TRITON_CACHE_DIR) and they are older than
`UNNAMED_AGE_S`. Only folders this user may remove are looked at (root: every user's).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
import threading
import time

PREFIXES = ("dojo-sandbox-", "dojo-triton-")
_OWNED = re.compile(r"^(dojo-(?:sandbox|triton)-)(\d+)-(\d+)-(\d+)-[A-Za-z0-9_]{8}$")
_UNNAMED = re.compile(r"^dojo-(?:sandbox|triton)-[A-Za-z0-9_]{8}$")
UNNAMED_AGE_S = 600.0  # an old-style folder this recent may still be between mkdtemp and use
_swept = False
_lock = threading.Lock()
_made: dict[str, int] = {}  # folders not yet removed -> the pid that made them (a fork's
_exiting = False            # child inherits this table, and must not remove its parent's)
_registered = False


class ScratchClosedError(OSError):
    """`make` was called after this process began to exit."""


def start_time(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (/proc/<pid>/stat); None when there is
    no such process, 0 where /proc does not exist (then only the pid is compared)."""
    if not os.path.isdir("/proc"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
        return int(stat[stat.rindex(")") + 2:].split()[19])  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


def pid_namespace() -> int:
    """This process's PID namespace (its inode; 0 where there is none to read): a pid means
    something only inside the namespace that gave it (a container sharing /tmp has another)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_tag(pid: int | None = None) -> str:
    """`<pid>-<start time>-<pid namespace>` of this process (or `pid`, a process in this
    namespace): what a folder's name records."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{start_time(pid) or 0}-{pid_namespace()}"


def _forked() -> None:
    """A fork's child gets a fresh lock (another thread may have held the parent's)."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def make(prefix: str) -> str:
    """A new private folder `<prefix><pid>-<start>-<ns>-XXXXXXXX` in the temporary directory,
    owned by this process (`sweep` leaves it alone while this process runs) and removed when
    this process exits, if `remove` has not removed it before."""
    global _registered
    if prefix not in PREFIXES:
        raise ValueError(f"{prefix!r} is not a grading's folder prefix {PREFIXES}")
    with _lock:
        if _exiting:
            raise ScratchClosedError(f"no new {prefix}* folder: this process is exiting")
        if not _registered:
            _registered = True
            atexit.register(_remove_all)
        folder = tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-")
        _made[folder] = os.getpid()
    return folder


def remove(folder: str) -> None:
    """Remove a folder `make` gave (and forget it: nothing left for the exit handler)."""
    shutil.rmtree(folder, ignore_errors=True)
    with _lock:
        _made.pop(folder, None)


def _remove_all() -> None:
    """At exit: no more folders, and this process's not removed yet are removed now."""
    global _exiting
    with _lock:
        _exiting = True
        left = sorted(f for f, pid in _made.items() if pid == os.getpid())
        _made.clear()
    for folder in left:
        shutil.rmtree(folder, ignore_errors=True)


def owner_alive(name: str) -> bool | None:
    """Whether the process a folder's name records still runs (the same process: pid and
    start time); None when the name records no owner, or one in another PID namespace (whose
    pids cannot be looked up from here: that folder is left alone)."""
    found = _OWNED.match(name)
    if found is None or int(found.group(4)) != pid_namespace():
        return None
    started = start_time(int(found.group(2)))
    return started is not None and (started == 0 or started == int(found.group(3)))


def _named_by_live_processes(paths: list[str]) -> set[str]:
    """Which of `paths` some live process carries in its command line or environment."""
    if not os.path.isdir("/proc"):
        return set(paths)  # cannot tell: keep them all
    wanted = [(p, p.encode()) for p in paths]
    named: set[str] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{part}", "rb") as fh:
                    data = fh.read()
            except OSError:  # gone, or another user's environment (then only root sweeps)
                continue
            named.update(p for p, raw in wanted if raw in data)
    return named


def _removable(st: os.stat_result) -> bool:
    """Root removes any user's folder; another user only their own (the rest they could not
    empty anyway: each folder is mode 0700)."""
    return os.geteuid() == 0 or st.st_uid == os.geteuid()


def sweep(folder: str | None = None) -> list[str]:
    """Remove the grading folders in `folder` (default: the temporary directory) whose owner
    has ended; returns the paths removed. Never one whose owner still runs."""
    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    unnamed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not entry.is_dir(follow_symlinks=False) or not _removable(st):
            continue
        alive = owner_alive(entry.name)
        if alive is False:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        elif alive is None and _UNNAMED.match(entry.name) and \
                now - st.st_mtime > UNNAMED_AGE_S:
            unnamed.append(entry.path)
    if unnamed:
        live = _named_by_live_processes(unnamed)
        for path in unnamed:
            if path not in live:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return [p for p in removed if not os.path.lexists(p)]


def sweep_once() -> None:
    """`sweep` the temporary directory the first time a grading in this process asks (each
    grader process sweeps once: what a killed grader left is found by the next one)."""
    global _swept
    if not _swept:
        _swept = True
        with contextlib.suppress(OSError):
            sweep()
