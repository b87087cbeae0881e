"""Paths to the engine's fixture files (the built-in bank is tested separately)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from questions.bank import ALL_KINDS, Bank, builtin_files, load_bank

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "questions"
VALID = FIXTURES / "valid"
BROKEN = FIXTURES / "broken"


@pytest.fixture
def valid_files() -> list[Path]:
    return sorted(VALID.glob("*.toml"))


@functools.cache
def builtin_bank() -> Bank:
    """The built-in bank, loaded and validated (~1 s) once per test process, not per module."""
    return load_bank(builtin_files())


@functools.cache
def builtin_bank_all_kinds() -> Bank:
    """The built-in bank with case studies, loaded without random draws (its rules are
    checked elsewhere), once per test process."""
    return load_bank(builtin_files(), kinds=ALL_KINDS, draws=0)
