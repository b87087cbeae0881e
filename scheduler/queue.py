"""Today's queue in plain SQL over a `sqlite3` connection: the one implementation that
`Store.today_queue` runs inside its read transaction and `dojo due`'s lean path runs on a
read-only connection without importing SQLAlchemy (~0.35 s of CPU at import).

The rules (docs/scheduling.md): due reviews oldest first within the review limit less today's
scheduled answers; new cards in position order up to the new-card limit less those introduced
today (a plan to the interview paces it instead); questions a failed lab case brought back today
and not answered since; cards whose latest graded answer today is below 4 (re-drill).
Suspended, buried and retired cards never appear.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from scheduler.records import Queue, QueueItem
from scheduler.transition import needs_redrill

if TYPE_CHECKING:
    from scheduler.plan import Plan

# Stored booleans are 0/1 and days ISO text ('YYYY-MM-DD'), as SQLAlchemy writes them.
VISIBLE = "NOT c.suspended AND NOT c.retired AND (c.buried_until IS NULL OR c.buried_until < ?)"
CHUNK = 500  # ids per IN (...) list: under SQLite's default host-parameter limit


def _date(value: str | None) -> dt.date | None:
    return None if value is None else dt.date.fromisoformat(value)


def read_queue(conn: sqlite3.Connection, day: dt.date, new_cap: int, review_cap: int,
               plan: Plan | None = None) -> Queue:
    """Today's queue for study day `day`; `plan` (when set) paces the new cards instead of
    `new_cap` where it can."""
    iso = day.isoformat()
    today = conn.execute(
        "SELECT question_id, mode, quality, due_before FROM reviews WHERE study_day = ? "
        "ORDER BY id", (iso,)).fetchall()
    scheduled = [r for r in today if r[1] == "review"]
    introduced = sum(1 for r in scheduled if r[3] is None)
    if plan is not None:  # a plan to the interview replaces the new-card limit
        new_cap = _paced(conn, plan, day, introduced, new_cap)
    room = max(0, review_cap - len(scheduled))
    due_rows = conn.execute(
        f"SELECT c.question_id, c.topic, c.due FROM cards c WHERE c.due <= ? AND {VISIBLE} "
        "ORDER BY c.due, c.position LIMIT ?", (iso, iso, room)).fetchall()
    new_room = min(max(0, new_cap - introduced), room - len(due_rows))
    new_rows = conn.execute(
        f"SELECT c.question_id, c.topic FROM cards c WHERE c.due IS NULL AND {VISIBLE} "
        "ORDER BY c.position LIMIT ?", (iso, new_room)).fetchall() if new_room > 0 else []
    failing = _failing(today)
    due_ids = {r[0] for r in due_rows}
    lab_items = lab_recall_items(conn, iso, due_ids | {r[0] for r in new_rows})
    redrill_topics = _visible_topics(conn, failing, iso)
    recalled = {i.question_id for i in lab_items}
    return Queue(
        day=day,
        reviews=tuple(QueueItem(q, topic, "review", _date(due)) for q, topic, due in due_rows),
        new=tuple(QueueItem(q, topic, "new", None) for q, topic in new_rows),
        redrill=tuple(QueueItem(q, redrill_topics[q], "redrill", None) for q in failing
                      if q in redrill_topics and q not in due_ids and q not in recalled),
        lab=lab_items,
        introduced=introduced,
    )


def _paced(conn: sqlite3.Connection, plan: Plan, day: dt.date, introduced: int,
           new_cap: int) -> int:
    """The plan's new-card limit for `day` (over the cards still new at its start), or
    `new_cap` once the plan no longer paces."""
    from scheduler.plan import paced_new_limit

    waiting = conn.execute("SELECT count(*) FROM cards c WHERE c.due IS NULL AND NOT "
                           "c.suspended AND NOT c.retired").fetchone()[0]
    paced = paced_new_limit(plan, day, waiting + introduced)
    return new_cap if paced is None else paced


def _failing(today: list[tuple[str, str, int, str | None]]) -> list[str]:
    """Cards whose latest graded (not cram) answer today is below the re-drill bar, in the
    order of those answers."""
    latest: dict[str, int] = {}
    for qid, mode, quality, _ in today:
        if mode != "cram":
            latest.pop(qid, None)  # keep the order of the latest answer
            latest[qid] = quality
    return [q for q, quality in latest.items() if needs_redrill(quality)]


def _visible_topics(conn: sqlite3.Connection, ids: list[str], iso_day: str) -> dict[str, str]:
    """Topic by id of the cards among `ids` that can be shown on `iso_day`."""
    topics: dict[str, str] = {}
    for chunk in range(0, len(ids), CHUNK):
        part = ids[chunk:chunk + CHUNK]
        topics.update(conn.execute(
            f"SELECT c.question_id, c.topic FROM cards c WHERE c.question_id IN "
            f"({','.join('?' * len(part))}) AND {VISIBLE}", (*part, iso_day)).fetchall())
    return topics


def lab_recall_items(conn: sqlite3.Connection, iso_day: str,
                     queued: set[str]) -> tuple[QueueItem, ...]:
    """Questions a failed lab case brought back on `iso_day` and not answered since (any
    mode), unless already in the queue (`queued`: today's reviews and new cards)."""
    rows = conn.execute(
        "SELECT r.question_id, r.exercise, r.level, r.case_id, r.created_ms, c.topic, c.due "
        "FROM lab_recalls r JOIN cards c ON c.question_id = r.question_id "
        f"WHERE r.study_day = ? AND {VISIBLE} ORDER BY r.created_ms, r.question_id",
        (iso_day, iso_day)).fetchall()
    if not rows:
        return ()
    answered = dict(conn.execute(
        "SELECT question_id, max(reviewed_ms) FROM reviews WHERE study_day = ? "
        "GROUP BY question_id", (iso_day,)).fetchall())
    return tuple(
        QueueItem(qid, topic, "lab", _date(due), exercise=exercise, level=int(level),
                  case=case_id)
        for qid, exercise, level, case_id, created_ms, topic, due in rows
        if qid not in queued and answered.get(qid, -1) < created_ms
    )
