"""Keep a learner's code from signalling processes outside its sandbox (the grader, the app).

A sandbox child and everything it forks carry the sandbox's token in their environment, so a
signal may go to the child itself, to its own process group, or to a process carrying the same
token (one the learner forked, even after setsid()). Anything else, `os.kill(-1, …)` and the
grader via `os.getppid()` included, raises `SignalRefused` in the learner's code and is reported
as an ordinary exception. The check is an audit hook (PEP 578; Python cannot remove one), which
also refuses ctypes lookups of the libc calls that would go around `os.kill`. A program the
learner execs does not inherit the hook: shutting that door needs a separate user or PID
namespace.
"""

from __future__ import annotations

import os
import sys
from typing import Any

TOKEN_VAR = "DOJO_SANDBOX_TOKEN"
# libc entry points that send signals (or any syscall) without passing through os.kill
RAW_SIGNAL_CALLS = frozenset(
    {"kill", "killpg", "tkill", "tgkill", "sigqueue", "pidfd_send_signal", "syscall"}
)


class SignalRefused(PermissionError):
    """A signal aimed outside the sandbox."""


def _carries(pid: int, tag: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return tag in f.read().split(b"\0")
    except OSError:  # gone, not ours to read, or no /proc
        return False


def _in_own_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == os.getpgrp()
    except ProcessLookupError:
        return True  # nothing to protect: os.kill itself reports that it does not exist
    except OSError:
        return False


def may_signal(pid: int, tag: bytes) -> bool:
    """Whether os.kill(pid, …) stays inside the sandbox (pid < 0 means the group -pid)."""
    if pid == -1:
        return False  # every process this user may signal
    if pid == 0 or pid == os.getpid():
        return True  # our own group / ourselves
    if pid < 0:
        group = -pid
        return group == os.getpgrp() or (bool(tag) and _carries(group, tag))
    return _in_own_group(pid) or (bool(tag) and _carries(pid, tag))


def install(token: str | None = None) -> None:
    """Install the hook in this process (the sandbox child, before the learner's code loads)."""
    token = os.environ.get(TOKEN_VAR, "") if token is None else token
    tag = f"{TOKEN_VAR}={token}".encode() if token else b""

    def refuse(target: str) -> SignalRefused:
        return SignalRefused(
            f"the sandbox refuses to signal {target}: your code may only signal itself and "
            "processes it started"
        )

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "os.kill":
            pid = int(args[0])
            if not may_signal(pid, tag):
                raise refuse("every process (pid -1)" if pid == -1 else f"process {pid}")
        elif event == "os.killpg":
            group = int(args[0])
            if group != 0 and not may_signal(-group, tag):
                raise refuse(f"process group {group}")
        elif event == "ctypes.dlsym" and args[1] in RAW_SIGNAL_CALLS:
            raise refuse(f"anything through ctypes ({args[1]}() bypasses os.kill)")

    sys.addaudithook(hook)
