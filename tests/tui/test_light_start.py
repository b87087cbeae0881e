"""The first screen paints before anything heavy is imported (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import trainer.cli
from trainer.app import DojoApp
from trainer.screens.today import TodayScreen
print(json.dumps(sorted(m for m in ("torch", "transformers", "sqlalchemy", "questions.bank",
                                    "scheduler.store") if m in sys.modules)))
"""


@pytest.mark.slow
def test_the_app_and_home_screen_import_nothing_heavy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    ).stdout
    assert json.loads(out.splitlines()[-1]) == []
