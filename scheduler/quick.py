"""Today's counts and queue read with plain sqlite3, for the paths that must not wait for the
full store (SQLAlchemy: ~0.35 s of CPU at import): the home screen's first paint and `dojo due`.

Only the common case is answered here; anything that needs the store's own handling (no
database yet, another schema version, a read-only file or folder, settings that fall back to
their defaults, a mid-day day-rule change, no backup made yet today, cards out of step with
the bank, a passed lab level without its card, a lab rebuild due) gives None, and the caller
opens the full store. The queue itself is `scheduler.queue.read_queue`, the SQL the store runs;
tests check the counts and `dojo due` agree with the store on real histories.

The home screen's other figures (answers per day, the forecast, true retention, the streak's
days, the cards, the lab levels passed) are read here too, by the one implementation: the
store's own methods run these functions inside their read transaction (`Store.cards`,
`reviews_per_day`, ...), so `quick_home` and the store cannot disagree.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler.days import (
    from_ms,
    real_utc_now,
    resolve_timezone,
    streak_from_days,
    study_day,
    to_ms,
    utc_now,
)
from scheduler.fsrs_memory import Memory
from scheduler.queue import read_queue
from scheduler.records import Card, Queue, Retention, Settings
from scheduler.schema import SCHEMA_VERSION
from scheduler.sm2 import CardState

if TYPE_CHECKING:
    from scheduler.plan import Pace, Plan

T = TypeVar("T")
MATURE_DAYS = 21  # true retention counts reviews of cards at this interval or longer


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
    moment = now or utc_now()
    return _with_connection(path, lambda conn: _today(conn, moment))


def quick_queue(path: Path, questions: Sequence[tuple[str, str]],
                now: dt.datetime | None = None) -> Queue | None:
    """Today's queue from the database at `path`, as `Store.today_queue` gives it after
    `sync_cards(questions, retire_missing=True)` (`questions`: the bank's (id, topic) in study
    order), or None when only the full store can say: opening it would do more than read (the
    day's backup, an upgrade, a repair), the sync would change a card, or a lab rebuild is due
    (its wording is lab's)."""
    if not backup_made_today(path):
        return None
    moment = now or utc_now()

    def read(conn: sqlite3.Connection) -> Queue | None:
        opened = _open_day(conn, moment)
        if opened is None or not cards_in_sync(conn, questions):
            return None
        day, new_cap, review_cap, plan = opened
        if _lab_pending(conn, day):
            return None
        return read_queue(conn, day, new_cap, review_cap, plan)

    return _with_connection(path, read)


@dataclass(frozen=True)
class QuickHome:
    """What the home screen shows, read as the store would after opening (see `quick_home`)."""

    settings: Settings
    plan: Plan | None  # the plan to the interview, if set
    queue: Queue
    per_day: dict[dt.date, int]  # answers per study day, the last 84 days, oldest first
    streak: int
    retention: Retention  # true retention over 30 days
    forecast: dict[dt.date, int]  # due reviews per day, the next 14 days
    cards: list[Card]
    fsrs_parameters: object  # the learner's fitted FSRS weights as stored (None: defaults)
    labs_passed: set[tuple[str, int]]
    pace: Pace | None  # the learner's pace, read when a plan is set (its simulation runs at it)

    @property
    def first_run(self) -> bool:
        """No answer in the heatmap's days and every card still new (as the full view)."""
        return not any(self.per_day.values()) and all(c.is_new for c in self.cards)


def quick_home(path: Path, questions: Sequence[tuple[str, str]],
               now: dt.datetime | None = None) -> QuickHome | None:
    """The home screen's data from the database at `path`, as the store gives it after
    `sync_cards(questions, retire_missing=True)`, or None under the same conditions as
    `quick_queue` (only the full store can say), but one: the day's first start is answered
    too, before the store's open makes the day's backup (the app opens the store right after
    this read; `dojo due`'s lean path never does, so it leaves the first start to the store)."""
    moment = now or utc_now()

    def read(conn: sqlite3.Connection) -> QuickHome | None:
        found = _day_settings(conn, moment)
        if found is None or not cards_in_sync(conn, questions):
            return None
        day, cfg, plan = found
        if _lab_pending(conn, day):
            return None
        from scheduler.readiness import FSRS_PARAMETERS_KEY

        return QuickHome(
            settings=cfg, plan=plan,
            queue=read_queue(conn, day, cfg.new_limit, cfg.review_limit, plan),
            per_day=reviews_per_day(conn, day, 84),
            streak=streak_from_days(study_days(conn, day), day),
            retention=true_retention(conn, day, 30),
            forecast=forecast(conn, day, 14),
            cards=read_cards(conn),
            fsrs_parameters=stored_value(conn, FSRS_PARAMETERS_KEY),
            labs_passed=lab_levels_passed(conn),
            pace=None if plan is None else read_pace(conn),
        )

    return _with_connection(path, read)


def _lab_pending(conn: sqlite3.Connection, day: dt.date) -> bool:
    """A lab rebuild due, or a pass the store's open gives its card: the store's job."""
    return conn.execute(
        "SELECT 1 FROM lab_cards WHERE due <= ? UNION ALL SELECT 1 FROM lab_attempts a "
        "WHERE a.passed AND NOT EXISTS (SELECT 1 FROM lab_cards c WHERE "
        "c.exercise = a.exercise AND c.level = a.level) LIMIT 1",
        (day.isoformat(),)).fetchone() is not None


# --- reads the store runs too (one implementation) ------------------------------------------


def reviews_per_day(conn: sqlite3.Connection, today: dt.date, days: int) -> dict[dt.date, int]:
    """Answers (all modes) per study day over the `days` days ending `today`, oldest first,
    zeros included."""
    start = today - dt.timedelta(days=days - 1)
    counts = {dt.date.fromisoformat(d): n for d, n in conn.execute(
        "SELECT study_day, count(*) FROM reviews WHERE study_day >= ? AND study_day <= ? "
        "GROUP BY study_day", (start.isoformat(), today.isoformat()))}
    return {start + dt.timedelta(days=i): counts.get(start + dt.timedelta(days=i), 0)
            for i in range(days)}


def study_days(conn: sqlite3.Connection, today: dt.date) -> list[dt.date]:
    """The distinct study days with an answer, up to `today`, newest first (the streak's)."""
    return [dt.date.fromisoformat(d) for (d,) in conn.execute(
        "SELECT DISTINCT study_day FROM reviews WHERE study_day <= ? ORDER BY study_day DESC",
        (today.isoformat(),))]


def true_retention(conn: sqlite3.Connection, today: dt.date, days: int) -> Retention:
    """Passes (grade >= 3) of scheduled reviews of mature cards (interval >= MATURE_DAYS
    before the answer) over the `days` days ending `today`."""
    start = today - dt.timedelta(days=days - 1)
    total, passed = conn.execute(
        "SELECT count(*), coalesce(sum(CASE WHEN quality >= 3 THEN 1 ELSE 0 END), 0) "
        "FROM reviews WHERE mode = 'review' AND interval_before >= ? AND study_day >= ? "
        "AND study_day <= ?", (MATURE_DAYS, start.isoformat(), today.isoformat())).fetchone()
    return Retention(passed=int(passed), total=int(total))


def forecast(conn: sqlite3.Connection, today: dt.date, days: int) -> dict[dt.date, int]:
    """Due reviews per day for the `days` days from `today` (overdue cards count on today);
    suspended and retired cards left out."""
    end = today + dt.timedelta(days=days - 1)
    out = {today + dt.timedelta(days=i): 0 for i in range(days)}
    for due, n in conn.execute(
            "SELECT due, count(*) FROM cards WHERE due IS NOT NULL AND due <= ? "
            "AND NOT suspended AND NOT retired GROUP BY due", (end.isoformat(),)):
        out[max(dt.date.fromisoformat(due), today)] += n
    return out


def read_cards(conn: sqlite3.Connection) -> list[Card]:
    """Every card, in new-card order."""
    return [_card(row) for row in conn.execute(
        "SELECT question_id, topic, ef, repetitions, interval, due, lapses, leech, suspended, "
        "buried_until, retired, created_ms, last_reviewed_ms, fsrs_stability, fsrs_difficulty,"
        " fsrs_last_ms FROM cards ORDER BY position")]


def _card(row: tuple[Any, ...]) -> Card:
    (qid, topic, ef, reps, interval, due, lapses, leech, suspended, buried, retired, created,
     last, stability, difficulty, memory_ms) = row
    memory = (None if stability is None or difficulty is None or memory_ms is None
              else Memory(stability, difficulty, from_ms(memory_ms)))
    return Card(
        question_id=qid, topic=topic, state=CardState(ef, reps, interval),
        due=None if due is None else dt.date.fromisoformat(due), lapses=lapses,
        leech=bool(leech), suspended=bool(suspended),
        buried_until=None if buried is None else dt.date.fromisoformat(buried),
        retired=bool(retired), created_at=from_ms(created),
        last_reviewed_at=None if last is None else from_ms(last), memory=memory)


def lab_levels_passed(conn: sqlite3.Connection) -> set[tuple[str, int]]:
    """(exercise, level) of every level with a passing attempt."""
    return {(e, int(lv)) for e, lv in conn.execute(
        "SELECT DISTINCT exercise, level FROM lab_attempts WHERE passed")}


def read_pace(conn: sqlite3.Connection) -> Pace:
    """The learner's pace (`scheduler.plan.Pace.measured`): every answer's response time, the
    first scheduled answer's grade of each new card, the lab cards' latest timed passes."""
    from scheduler.plan import Pace

    return Pace.measured(
        (ms for (ms,) in conn.execute("SELECT response_ms FROM reviews ORDER BY id")),
        (q for (q,) in conn.execute("SELECT quality FROM reviews WHERE mode = 'review' "
                                    "AND due_before IS NULL ORDER BY id")),
        conn.execute("SELECT level, last_pass_s FROM lab_cards ORDER BY exercise, level"))


def stored_value(conn: sqlite3.Connection, key: str) -> Any:
    """A JSON value another module keeps in the settings table (None: absent or unreadable)."""
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    try:
        return None if row is None else json.loads(row[0])
    except ValueError:
        return None


def backup_made_today(path: Path) -> bool:
    """Whether today's rolling backup exists (else `Store.open` makes it: the full path)."""
    from scheduler.backup import has_backup_on

    try:
        return has_backup_on(path, real_utc_now().date())
    except OSError:
        return False


def cards_in_sync(conn: sqlite3.Connection, questions: Sequence[tuple[str, str]]) -> bool:
    """Whether `Store.sync_cards(questions, retire_missing=True)` would leave every card as it
    is: each question has its card, with its topic, not retired; every other card is retired;
    the never-reviewed cards already stand in the order given."""
    cards = {qid: (topic, retired, position, due is None) for qid, topic, retired, position, due
             in conn.execute("SELECT question_id, topic, retired, position, due FROM cards")}
    if not questions or len(cards) < len(questions):
        return False
    new_positions = []
    for qid, topic in questions:
        card = cards.get(qid)
        if card is None or card[0] != topic or card[1]:
            return False
        if card[3]:
            new_positions.append(card[2])
    live = sum(1 for card in cards.values() if not card[1])
    return live == len({q for q, _ in questions}) and new_positions == sorted(new_positions)


def _with_connection(path: Path, read: Callable[[sqlite3.Connection], T | None]) -> T | None:
    """`read` on a read-only connection to `path`, or None (no usable file, an SQLite error,
    a stored value that does not parse)."""
    if not (path.is_file() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return None  # first run or read-only: the store creates or browses it
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return None
    try:
        with conn:  # one read transaction: the queue and the checks see the same rows
            conn.execute("BEGIN")
            return read(conn)
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        conn.close()


def _settings(conn: sqlite3.Connection, moment: dt.datetime) -> tuple[Settings, object] | None:
    """(the settings, the stored plan's JSON) when every value is usable as stored (the
    store's rules, `scheduler.setting_checks`: where it would warn and use a default, the
    store says so)."""
    from dataclasses import fields

    from scheduler.setting_checks import setting_problems

    known = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}
    plan: object = None
    for key, raw in conn.execute("SELECT key, value FROM settings"):
        if key == "_day_rule_hold":
            since, until = json.loads(raw)[2:4]
            if int(since) <= to_ms(moment) < int(until):
                return None  # the previous day rule still applies: the store's job
        elif key == "plan":
            plan = json.loads(raw)
        elif key in known:
            values[key] = json.loads(raw)
    if setting_problems(values):
        return None
    return Settings(**values), plan


def _open_day(conn: sqlite3.Connection,
              moment: dt.datetime) -> tuple[dt.date, int, int, Plan | None] | None:
    """(the study day, the new-card and review limits, the plan) as the store reads them, or
    None where only the store can say (another schema version, unusable settings)."""
    found = _day_settings(conn, moment)
    if found is None:
        return None
    day, cfg, plan = found
    return day, cfg.new_limit, cfg.review_limit, plan


def _day_settings(conn: sqlite3.Connection,
                  moment: dt.datetime) -> tuple[dt.date, Settings, Plan | None] | None:
    """(the study day, the settings, the plan), or None where only the store can say."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        return None
    found = _settings(conn, moment)
    if found is None:
        return None
    cfg, plan_json = found
    day = study_day(moment, cfg.rollover_hour, resolve_timezone(cfg.timezone))
    plan = None
    if plan_json is not None:
        from scheduler.plan import Plan

        plan = Plan.from_json(plan_json)
    return day, cfg, plan


def _today(conn: sqlite3.Connection, moment: dt.datetime) -> QuickToday | None:
    opened = _open_day(conn, moment)
    if opened is None:
        return None
    day = opened[0]
    iso = day.isoformat()
    if conn.execute("SELECT 1 FROM lab_recalls WHERE study_day = ? LIMIT 1", (iso,)).fetchone():
        return None
    queue = read_queue(conn, *opened)
    days = study_days(conn, day)
    # As the full view: no answer in the heatmap's 84 days and every card still new.
    first_run = (not days or days[0] < day - dt.timedelta(days=83)) and not conn.execute(
        "SELECT 1 FROM cards WHERE due IS NOT NULL LIMIT 1").fetchone()
    return QuickToday(day=day, due=len(queue.reviews), new=len(queue.new),
                      redrill=len(queue.redrill), streak=streak_from_days(days, day),
                      first_run=bool(first_run))
