"""Landlock (Linux 5.13+, no privilege needed): the allow-list root where namespaces are denied.

`restrict(spec)` limits the calling process and everything it starts to the paths of a
`lab.grader.root.RootSpec` — read-only for `read`, full rights for `write` — and, where the
kernel's ABI has them, refuses TCP bind/connect (ABI 4), ioctls on devices other than the listed
nodes (ABI 5), and signals or abstract sockets reaching outside the domain (ABI 6: the grader,
the app and the sandbox's own waiter cannot be signalled). Rules only grant, so what must stay
hidden (the checkout, the data folder) is simply never granted. Raw syscalls through ctypes
(444-446 on every architecture): Python has no binding.
"""

from __future__ import annotations

import ctypes
import os
import struct

from lab.grader.root import RootSpec

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # valid on a file rule
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
# what a learner's writable folder allows: everything but device nodes
WRITE_RIGHTS = (READ_RIGHTS | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG
                | MAKE_SOCK | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE)
# paths Landlock mode reads besides the root's: process and CPU information (glibc, torch)
INFO_PATHS = ("/proc", "/sys")


class LandlockError(OSError):
    """Landlock is there but a step failed: grading must stop, not run unconfined."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI (0: not there, switched off, or not Linux)."""
    try:
        libc = _libc()
    except OSError:
        return 0
    libc.syscall.restype = ctypes.c_long
    got = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(got))


def _handled_fs(abi: int) -> int:
    rights = (EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR
              | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(got: int, step: str) -> int:
    if got < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"Landlock {step}: {os.strerror(err)}")
    return got


def restrict(spec: RootSpec, *, network: bool) -> int:
    """Restrict this process (and what it starts) to `spec`; returns the ABI used. Needs
    no_new_privs set first. `network`: leave TCP open (the tensor-parallel ranks' loopback)."""
    abi = abi_version()
    if abi < 1:
        raise LandlockError(0, "Landlock is not available")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _handled_fs(abi)
    net = 0 if network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buf = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _check(libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), buf, ctypes.c_size_t(size),
                                  ctypes.c_uint32(0)), "create_ruleset")
    try:
        read = spec.expanded()
        grants = [(p, READ_RIGHTS) for p in (*read, *INFO_PATHS)]
        # the folders holding them may be listed (names only): Python's import system lists
        # every folder on sys.path and every package folder before it opens a module there
        grants += [(p, READ_DIR) for p in dict.fromkeys(os.path.dirname(r) for r in read)]
        grants += [(p, WRITE_RIGHTS) for p in spec.write]
        grants += [(p, READ_FILE | WRITE_FILE | (IOCTL_DEV if abi >= 5 else 0))
                   for p in spec.devices]
        for path, rights in grants:
            _grant(libc, ruleset, path, rights & handled)
        _check(libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset),
                            ctypes.c_uint32(0)), "restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _grant(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone meanwhile: nothing to grant
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        _check(libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                            ctypes.c_int(RULE_PATH_BENEATH), attr, ctypes.c_uint32(0)),
               f"add_rule {path}")
    finally:
        os.close(fd)
