"""Limits the kernel enforces on the learner's process, and what the grader says when one is hit.

Set in the sandbox child before any learner code (inherited by everything it starts):
`RLIMIT_FSIZE` (no file written, extended, truncated up or preallocated past `FILE_LIMIT_MB`:
the write fails with EFBIG — CPython ignores SIGXFSZ — so a loop writing a file stops at the
limit instead of filling the disk), `RLIMIT_NOFILE`, `RLIMIT_CPU` (SIGXCPU at the soft limit,
SIGKILL at the hard one) and no core files. Output, memory (shared memory included), the
number of processes and what the workspace folder gained are counted by the grader
(`lab.grader.isolation`), which stops the child past `OUTPUT_LIMIT_BYTES`, the memory cap,
`MAX_PROCESSES` or `WORKSPACE_LIMIT_MB`.
"""

from __future__ import annotations

import errno
import resource

FILE_LIMIT_MB = 64  # the largest file the learner's code may write (its workspace, /tmp)
OPEN_FILES = 1024
CPU_SECONDS = 3600  # CPU time of one child process, all requests together
OUTPUT_LIMIT_BYTES = 4 << 20  # what the learner's code may print during one request
WORKSPACE_LIMIT_MB = 256  # what the learner's code may add to its workspace folder, all files
WATCHED_ENTRIES = 2000  # a workspace with more entries than this is not watched (too slow)
TMP_WATCHED_ENTRIES = 10000  # the same for Landlock's temporary folder (a host folder)
MAX_PROCESSES = 1024  # processes and threads in the learner's tree (counted by the grader)
MESSAGE_LIMIT_CHARS = 4000  # what a failure's message or traceback shows of itself


def apply() -> None:
    """Set the limits in this process (the sandbox child, before the learner's file loads)."""
    for which, value in ((resource.RLIMIT_FSIZE, FILE_LIMIT_MB << 20),
                         (resource.RLIMIT_NOFILE, OPEN_FILES),
                         (resource.RLIMIT_CPU, CPU_SECONDS)):
        hard = resource.getrlimit(which)[1]
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        top = cap + 5 if which == resource.RLIMIT_CPU else cap  # SIGXCPU first, then SIGKILL
        resource.setrlimit(which, (cap, top if hard == resource.RLIM_INFINITY
                                   else min(top, hard)))


def explain(exc: BaseException) -> str | None:
    """The message for an error that is one of these limits, else None."""
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        where = f" ({exc.filename})" if exc.filename else ""
        return (f"your code wrote a file{where} up to {FILE_LIMIT_MB} MiB, the sandbox's limit "
                "on one file (stopped there: nothing past it reached the disk)")
    if (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)) or (
            isinstance(exc, OSError) and exc.errno == errno.EAGAIN
            and "fork" in str(getattr(exc, "filename", "") or exc).lower()):
        return ("your code could not start another thread or process: the sandbox limits the "
                "threads and processes of your code and the memory they reserve (a fork or "
                "thread bomb?)")
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        return (f"your code opened more than {OPEN_FILES} files at once, the sandbox's limit — "
                "close the files you no longer need")
    return None


def human_bytes(n: float) -> str:
    """1536 -> "1.5 KB": how much was written or printed, said as people say it."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def cut(text: str, limit: int = MESSAGE_LIMIT_CHARS) -> str:
    """`text` with its middle left out past `limit` characters: a message or traceback that
    carries the learner's text (an exception's message, a value in a check's message) is
    bounded like their output, or a 140 MB exception message was printed whole (280 MB on the
    terminal) and took minutes to clean."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return (f"{text[:half]}… ({len(text) - 2 * half:,} characters not shown) …"
            f"{text[-half:]}")
