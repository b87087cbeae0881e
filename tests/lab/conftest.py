"""Lab tests: paths to the fixture solutions; torch (if a test loads it) on one thread."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE / "solutions"
BROKEN = HERE / "broken"
ROOT = HERE.parents[1]

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def solutions() -> Path:
    return SOLUTIONS
