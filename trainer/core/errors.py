"""The errors screens and commands name, handed on by the core: they never import the
scheduler themselves (an import-linter contract). Light: the scheduler's error classes only."""

from __future__ import annotations

from scheduler.days import ClockError
from scheduler.errors import (
    AnsweredElsewhereError,
    DiskFullError,
    HistoryFormatError,
    ReadOnlyDatabaseError,
    StoreError,
)

__all__ = [
    "AnsweredElsewhereError",
    "ClockError",
    "DiskFullError",
    "HistoryFormatError",
    "ReadOnlyDatabaseError",
    "StoreError",
]
