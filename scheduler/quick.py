"""Today's counts (due, new, re-drill, streak) read with plain sqlite3: what the home screen
paints while the full store (SQLAlchemy, ~0.2 s of imports) and the bank load behind it.

Only the common case is answered here; anything that needs the store's own handling (no
database yet, another schema version, a read-only file or folder, settings that fall back to
their defaults, a mid-day day-rule change, lab recalls today) gives None, and the home screen
waits for the full view. The counts follow `Store.today_queue` rule for rule; a test checks
they agree on real histories.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from scheduler.days import resolve_timezone, streak_from_days, study_day, to_ms, utc_now
from scheduler.records import Settings
from scheduler.schema import SCHEMA_VERSION
from scheduler.transition import needs_redrill


@dataclass(frozen=True)
class QuickToday:
    """The home screen's first counts."""

    day: dt.date
    due: int
    new: int
    redrill: int
    streak: int
    first_run: bool  # no answer logged yet

    @property
    def to_do(self) -> int:
        return self.due + self.new + self.redrill


def quick_today(path: Path, now: dt.datetime | None = None) -> QuickToday | None:
    """Today's counts from the database at `path`, or None when only the full store can say."""
    if not (path.is_file() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return None  # first run or read-only: the store creates or browses it
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return None
    try:
        return _read(conn, now or utc_now())
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        conn.close()


def _settings(conn: sqlite3.Connection, moment: dt.datetime) -> tuple[Settings, object] | None:
    """(the settings, the stored plan's JSON) when every value is usable as stored."""
    values: dict[str, object] = {}
    plan: object = None
    for key, raw in conn.execute("SELECT key, value FROM settings"):
        if key == "_day_rule_hold":
            since, until = json.loads(raw)[2:4]
            if int(since) <= to_ms(moment) < int(until):
                return None  # the previous day rule still applies: the store's job
        elif key == "plan":
            plan = json.loads(raw)
        elif key in ("new_limit", "review_limit", "rollover_hour", "timezone"):
            values[key] = json.loads(raw)
    for name in ("new_limit", "review_limit", "rollover_hour"):
        value = values.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
    tz = values.get("timezone")
    if tz is not None and not isinstance(tz, str):
        return None
    settings = Settings(**values)  # type: ignore[arg-type]
    if settings.rollover_hour > 23:
        return None
    resolve_timezone(settings.timezone)  # ValueError for an unknown zone: None
    return settings, plan


def _read(conn: sqlite3.Connection, moment: dt.datetime) -> QuickToday | None:
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        return None
    found = _settings(conn, moment)
    if found is None:
        return None
    cfg, plan_json = found
    day = study_day(moment, cfg.rollover_hour, resolve_timezone(cfg.timezone))
    iso = day.isoformat()
    if conn.execute("SELECT 1 FROM lab_recalls WHERE study_day = ? LIMIT 1", (iso,)).fetchone():
        return None
    today = conn.execute(
        "SELECT question_id, mode, quality, due_before FROM reviews WHERE study_day = ? "
        "ORDER BY id", (iso,)).fetchall()
    scheduled = [r for r in today if r[1] == "review"]
    introduced = sum(1 for r in scheduled if r[3] is None)
    new_cap = cfg.new_limit
    if plan_json is not None:  # a plan to the interview replaces the new-card limit
        from scheduler.plan import Plan, paced_new_limit

        plan = Plan.from_json(plan_json)
        if plan is not None:
            waiting = conn.execute("SELECT count(*) FROM cards WHERE due IS NULL AND NOT "
                                   "suspended AND NOT retired").fetchone()[0]
            paced = paced_new_limit(plan, day, waiting + introduced)
            new_cap = new_cap if paced is None else paced
    visible = "NOT suspended AND NOT retired AND (buried_until IS NULL OR buried_until < ?)"
    room = max(0, cfg.review_limit - len(scheduled))
    due_ids = {r[0] for r in conn.execute(
        f"SELECT question_id FROM cards WHERE due <= ? AND {visible} "
        "ORDER BY due, position LIMIT ?", (iso, iso, room))}
    new_room = min(max(0, new_cap - introduced), room - len(due_ids))
    waiting_visible = conn.execute(
        f"SELECT count(*) FROM cards WHERE due IS NULL AND {visible}", (iso,)).fetchone()[0]
    latest: dict[str, int] = {}
    for qid, mode, quality, _ in today:
        if mode != "cram":
            latest[qid] = quality
    failing = [q for q, quality in latest.items() if needs_redrill(quality) and q not in due_ids]
    redrill = 0
    for chunk in range(0, len(failing), 500):
        part = failing[chunk:chunk + 500]
        redrill += conn.execute(
            f"SELECT count(*) FROM cards WHERE question_id IN ({','.join('?' * len(part))}) "
            f"AND {visible}", (*part, iso)).fetchone()[0]
    days = [dt.date.fromisoformat(d) for (d,) in conn.execute(
        "SELECT DISTINCT study_day FROM reviews WHERE study_day <= ? ORDER BY study_day DESC",
        (iso,))]
    # As the full view: no answer in the heatmap's 84 days and every card still new.
    first_run = (not days or days[0] < day - dt.timedelta(days=83)) and not conn.execute(
        "SELECT 1 FROM cards WHERE due IS NOT NULL LIMIT 1").fetchone()
    return QuickToday(day=day, due=len(due_ids), new=max(0, min(new_room, waiting_visible)),
                      redrill=redrill, streak=streak_from_days(days, day),
                      first_run=bool(first_run))
