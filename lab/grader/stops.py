"""A grading process stopped by SIGTERM or SIGHUP cleans up like one stopped by Ctrl-C.

Python's default for SIGTERM and SIGHUP ends the process at once: no `finally` runs, so the
sandbox's private temporary folder stayed behind (its children still died: their lifeline pipe
closed). `stopping()` turns either signal into `Stopped`, raised in the main thread like
KeyboardInterrupt (a BaseException, so no `except Exception` swallows it): every `finally` on the
way out kills the children and removes the folders, and the command then exits with the
conventional status 128 + the signal's number (143, 129). A second signal during that cleanup
is ignored; a cleanup that hangs is cut short after `GRACE_S` (what is left is swept by the next
grading: `lab.grader.scratch`). A signal the process was started ignoring stays ignored: `nohup`
(SIGHUP) keeps its promise, as Python keeps an inherited SIGINT ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # the longest a stopped process spends cleaning up before it exits anyway


class Stopped(BaseException):
    """The process was asked to stop by `signum`: clean up, then exit with `status`."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {self.name}")

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def status(self) -> int:
        """The exit status a shell reports for a process this signal ended: 128 + its number."""
        return 128 + self.signum


def _deadline(status: int) -> None:
    """Exit anyway once the cleanup has had `GRACE_S` (a thread: the main one is cleaning)."""
    timer = threading.Timer(GRACE_S, os._exit, (status,))
    timer.daemon = True
    timer.start()


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Stopped` in the main thread (elsewhere, or
    outside the main thread, nothing changes); the previous handlers come back after it. One
    that is ignored when the block starts (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    stopped = False

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True
        for sig in STOP_SIGNALS:  # the cleanup must not be cut short by a second signal
            signal.signal(sig, signal.SIG_IGN)
        _deadline(128 + signum)
        raise Stopped(signum)

    # a signal this process was started ignoring stays ignored (`nohup` ignores SIGHUP so the
    # command outlives its terminal), as Python leaves an inherited SIGINT ignored
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS
                if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        if not stopped:  # once stopped, the rest of the way out stays deaf to them
            for sig, old in previous.items():
                signal.signal(sig, old)


@contextlib.contextmanager
def remembered_interrupts() -> Iterator[Callable[[], None]]:
    """Within the block, Ctrl-C raises KeyboardInterrupt as usual and is also remembered: the
    function it gives raises KeyboardInterrupt again once one came. A loop that calls it stops
    even when library code swallowed the exception (a SIGINT landing in torch's pybind11 code
    was lost there, and `dojo lab watch` went on watching). Only where SIGINT has Python's
    own handler, in the main thread (an ignored Ctrl-C stays ignored); restored after."""
    seen = False

    def check() -> None:
        if seen:
            raise KeyboardInterrupt

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield check
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal seen
        seen = True
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)


def say_stopped(stopped: Stopped) -> None:
    """Tell a terminal still there why the command ended (a closed one gets nothing)."""
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(sys.stderr.fileno()):
            sys.stderr.write(f"\nStopped by {stopped.name}.\n")
            sys.stderr.flush()
