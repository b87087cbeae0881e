"""Fault-injection points for crash tests: a process dies *here*, as a power cut or a kill would.

`crash_point("name")` does nothing unless $DOJO_CRASH_AT names that point; then the process kills
itself with SIGKILL (no cleanup, no `finally`, no atexit), so a test running it in a subprocess
sees exactly what a crash at that line leaves on disk. Points: "lab-attempt-stored" (between a
grading's attempt rows and its lab card, inside their transaction), "backup-copied" (a backup's
`.partial` copy written, not yet renamed).
"""

from __future__ import annotations

import os
import signal

ENV = "DOJO_CRASH_AT"


def crash_point(name: str) -> None:
    """Kill this process now if $DOJO_CRASH_AT == name (tests only; a no-op otherwise)."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
