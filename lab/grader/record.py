"""The one place the lab talks to the scheduler's storage (the lab attempts table).

`scheduler.store.Store` is built in parallel: while it is missing the calls report "not stored"
instead of failing, and a storage error (say, a corrupt database) never loses a grading report —
it is returned as a message for the report to show.
"""

from __future__ import annotations

from typing import Any


def _store_class() -> Any:
    try:
        from scheduler.store import Store  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    return Store


def record_attempt(
    exercise: str,
    level: int,
    device: str,
    passed: bool,
    cases: list[dict[str, Any]],
    metrics: dict[str, float],
    duration_s: float,
) -> tuple[bool, str]:
    """Store one graded level. Returns (stored, why not)."""
    store_cls = _store_class()
    if store_cls is None:
        return False, "storage not available (scheduler.store is missing)"
    try:
        with store_cls.open() as store:
            store.record_lab_attempt(exercise, level, device, passed, cases, metrics, duration_s)
    except Exception as exc:  # storage trouble must not cost the learner their report
        return False, f"could not store the attempt: {type(exc).__name__}: {exc}"
    return True, ""


def attempts(exercise: str) -> list[Any] | None:
    """Stored attempts for an exercise (oldest first), or None when storage is unavailable."""
    store_cls = _store_class()
    if store_cls is None:
        return None
    try:
        with store_cls.open() as store:
            return list(store.lab_attempts(exercise))
    except Exception:
        return None
