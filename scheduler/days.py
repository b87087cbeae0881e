"""Study days: the learner's local calendar day, shifted by a rollover hour (Anki's 4 AM).

A session that runs past midnight still counts for the day it began, so streaks and the
daily limits follow the learner's sleep rather than the clock.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def resolve_timezone(name: str | None) -> dt.tzinfo | None:
    """Return the zone for an IANA name, or None for the system's local time."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"unknown timezone {name!r} (use an IANA name like 'Europe/Paris')"
        ) from exc


def study_day(now: dt.datetime, rollover_hour: int, tz: dt.tzinfo | None) -> dt.date:
    """The study day `now` belongs to. A naive `now` is read as system local time."""
    local = now.astimezone(tz) if tz is not None else now.astimezone()
    return (local.replace(tzinfo=None) - dt.timedelta(hours=rollover_hour)).date()


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def to_ms(moment: dt.datetime) -> int:
    """Epoch milliseconds; a naive datetime is read as system local time."""
    aware = moment.astimezone() if moment.tzinfo is None else moment
    return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def from_ms(ms: int) -> dt.datetime:
    """UTC-aware datetime for epoch milliseconds."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
