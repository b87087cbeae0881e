"""Errors the Store raises; each message says what is wrong and that nothing was changed."""

from __future__ import annotations


class StoreError(Exception):
    """Base class for every error the scheduler's storage raises on purpose."""


class CorruptDatabaseError(StoreError):
    """The file is not a readable Serving Dojo database; it was left untouched."""


class NewerDatabaseError(StoreError):
    """The file was written by a newer version of the app; it was left untouched."""


class UnknownCardError(StoreError, LookupError):
    """No card exists for the given question id."""


class HistoryFormatError(StoreError, ValueError):
    """An imported history document is invalid; nothing was imported."""


class DiskFullError(StoreError):
    """SQLite could not write because the disk (or the database's size limit) is full."""


class ReadOnlyDatabaseError(StoreError):
    """The database or its folder cannot be written; the file itself is healthy."""


class AnsweredElsewhereError(StoreError, ValueError):
    """The card was already answered today, e.g. in another open window."""
