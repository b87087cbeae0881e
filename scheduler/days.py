"""Study days: the learner's local calendar day, shifted by a rollover hour (Anki's 4 AM).

A session that runs past midnight still counts for the day it began, so streaks and the
daily limits follow the learner's sleep rather than the clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
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


def streak_from_days(days_newest_first: Iterable[dt.date], today: dt.date) -> int:
    """Consecutive study days with at least one answer, ending today (or yesterday, so an
    unfinished today does not break it), from the distinct days answered up to today."""
    expected = today
    count = 0
    for d in days_newest_first:
        if d == expected:
            count += 1
        elif count == 0 and d == today - dt.timedelta(days=1):
            count, expected = 1, d
        else:
            break
        expected = d - dt.timedelta(days=1)
    return count


# $DOJO_NOW pins the clock (an ISO date-time, e.g. 2026-12-02T09:00:00) to rehearse a future
# day; it must fall within these years, leaving room for due dates and forecasts after it.
NOW_ENV = "DOJO_NOW"
NOW_YEARS = (1971, 2999)


class ClockError(ValueError):
    """$DOJO_NOW is not a date-time this app can study on."""


def pinned_now(raw: str | None = None) -> dt.datetime | None:
    """The moment $DOJO_NOW pins (aware; a naive value is local time), or None when unset.

    Raises ClockError, naming the variable and the accepted range, for a value that is not
    an ISO date-time or lies outside NOW_YEARS (9999-12-31 would overflow every due date)."""
    import os

    value = os.environ.get(NOW_ENV) if raw is None else raw
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ClockError(
            f"{NOW_ENV}={value!r} is not an ISO date-time (e.g. 2026-12-02T09:00:00); "
            f"unset it to use the real clock"
        ) from None
    low, high = NOW_YEARS
    if not low <= moment.year <= high:
        raise ClockError(
            f"{NOW_ENV}={value!r} is outside the years {low}-{high} this app can schedule in; "
            f"unset it to use the real clock"
        )
    return moment.astimezone() if moment.tzinfo is None else moment


def real_utc_now() -> dt.datetime:
    """The wall clock, ignoring $DOJO_NOW (backup names and their daily check use it)."""
    return dt.datetime.now(dt.UTC)


def utc_now() -> dt.datetime:
    """The current moment: $DOJO_NOW when set (rehearsing a future day), else the wall clock."""
    pinned = pinned_now()
    return real_utc_now() if pinned is None else pinned.astimezone(dt.UTC)


def to_ms(moment: dt.datetime) -> int:
    """Epoch milliseconds; a naive datetime is read as system local time."""
    aware = moment.astimezone() if moment.tzinfo is None else moment
    return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def from_ms(ms: int) -> dt.datetime:
    """UTC-aware datetime for epoch milliseconds."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
