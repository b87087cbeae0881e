"""timed-demo, hostile: remembers what its first call (the graded one) saw around it — every
frame on the stack (file, function, line), the depth, the process (pid, cwd, argv, environment,
threads, limits) — and skips the work whenever a later call sees anything else. It passes only
if a timed call looks exactly like the checked one."""

import os
import resource
import sys
import threading

_first = None


def _surroundings():
    stack = []
    frame = sys._getframe(2)
    while frame is not None:
        stack.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    limits = tuple(resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU,
                                                   resource.RLIMIT_NOFILE))
    return (tuple(stack), os.getpid(), os.getcwd(), tuple(sys.argv),
            tuple(sorted(os.environ.items())), threading.active_count(), limits,
            sys.getrecursionlimit())


def square_sum(a):
    global _first
    seen = _surroundings()
    if _first is None:
        _first = seen
    if seen != _first:
        return a.sum() * 0  # "timed": skip the work
    return (a @ a).sum()
