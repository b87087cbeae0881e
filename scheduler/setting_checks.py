"""What may be wrong with each setting's value: the one set of rules the store (which warns and
falls back to the default) and the quick read (which gives way to the store) both apply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.days import resolve_timezone

SCHEDULERS = ("sm2", "fsrs")


def _count_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"must be a whole number >= 0, got {value!r}"
    return None


def _scheduler_problem(value: Any) -> str | None:
    if value not in SCHEDULERS:
        return f"must be one of {', '.join(SCHEDULERS)}, got {value!r}"
    return None


def _retention_problem(value: Any) -> str | None:
    from scheduler.fsrs_memory import check_retention

    return check_retention(value)


def _host_problem(host: Any) -> str | None:
    if host is not None and (not isinstance(host, str) or not host or host.startswith("-")
                             or any(c.isspace() or ord(c) < 32 for c in host)):
        return (f"must be an ssh destination (no spaces, not starting with '-') or local, got "
                f"{host!r}")
    return None


def _hour_problem(hour: Any) -> str | None:
    if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
        return f"must be an hour 0-23, got {hour!r}"
    return None


def _timezone_problem(tz: Any) -> str | None:
    if tz is not None and not isinstance(tz, str):
        return f"must be an IANA name, got {tz!r}"
    try:
        resolve_timezone(tz)
    except ValueError as exc:
        return str(exc)
    return None


# What may be wrong with each setting's value (None: nothing), in the order problems are listed.
_SETTING_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "new_limit": _count_problem, "review_limit": _count_problem,
    "backup_keep": _count_problem, "leech_lapses": _count_problem,
    "scheduler": _scheduler_problem, "desired_retention": _retention_problem,
    "lab_host": _host_problem, "rollover_hour": _hour_problem, "timezone": _timezone_problem,
}


def setting_problems(values: dict[str, Any]) -> dict[str, str]:
    """What is wrong with each given setting value (key -> why), for every key at once."""
    problems: dict[str, str] = {}
    for name, check in _SETTING_CHECKS.items():
        why = check(values[name]) if name in values else None
        if why is not None:
            problems[name] = why
    return problems
