"""Paths to the engine's fixture files (the built-in bank is tested separately)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "questions"
VALID = FIXTURES / "valid"
BROKEN = FIXTURES / "broken"


@pytest.fixture
def valid_files() -> list[Path]:
    return sorted(VALID.glob("*.toml"))
