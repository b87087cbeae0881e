"""`freeze_at_exit`: a lab command's exit skips collecting what torch made (everything alive is
frozen by the time the earlier exit handlers run), registered once per process, and nothing
else changes at exit: earlier handlers still run, output is still flushed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a Python subprocess each

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import atexit, gc, sys, tempfile
from trainer.commands.lab_common import freeze_at_exit
folder = tempfile.TemporaryDirectory()          # removed by an exit handler registered earlier
print(folder.name)
atexit.register(lambda: print("frozen:", gc.get_freeze_count() > 0))  # runs after freezing
before = atexit._ncallbacks()
CALLS
print("registered:", atexit._ncallbacks() - before)
sys.stdout.write("tail, ")
"""


def _run(calls: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT.replace("CALLS", calls)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_exit_freezes_once_and_keeps_earlier_handlers() -> None:
    folder, registered, last = _run("freeze_at_exit(); freeze_at_exit()")
    assert registered == "registered: 1"  # once, however often it is called
    assert last == "tail, frozen: True"  # flushed, and frozen before earlier handlers ran
    assert not Path(folder).exists()  # the earlier handler (TemporaryDirectory's) still ran


def test_without_it_nothing_is_frozen_at_exit() -> None:
    assert _run("pass")[1:] == ["registered: 0", "tail, frozen: False"]
