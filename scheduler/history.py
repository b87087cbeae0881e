"""Export and import of the review history as JSON.

The document carries every card's schedule, the whole answer log, the lab attempts, the
lab cards (schema v4) and the mock rounds (schema v5); the last two are optional on import, so
older files still read. A mock round is known by its start time. Log
rows and lab attempts carry a stable `uid`, so importing the same file twice adds nothing.
A card's schedule is taken from the file only when the file has seen a later review of it
than this database has. Everything is validated before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scheduler.days import utc_now
from scheduler.errors import HistoryFormatError
from scheduler.models import (
    CardRow,
    FlagRow,
    LabAttemptRow,
    LabCardRow,
    MockRoundRow,
    ReviewRow,
)
from scheduler.records import MODES, ImportSummary
from scheduler.sm2 import MIN_EF

FORMAT = "serving-dojo-history"
VERSION = 1  # reviews' mistake_id/overridden (schema v3) are optional keys

def _day(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def export_history(s: Session) -> dict[str, Any]:
    cards = [
        {"question_id": c.question_id, "topic": c.topic, "position": c.position,
         "ef_hundredths": c.ef, "repetitions": c.repetitions, "interval": c.interval,
         "due": _day(c.due), "lapses": c.lapses, "leech": c.leech, "suspended": c.suspended,
         "buried_until": _day(c.buried_until), "retired": c.retired,
         "created_ms": c.created_ms, "last_reviewed_ms": c.last_reviewed_ms}
        for c in s.scalars(select(CardRow).order_by(CardRow.position))
    ]
    reviews = [
        {"uid": r.uid, "question_id": r.question_id, "reviewed_ms": r.reviewed_ms,
         "study_day": r.study_day.isoformat(), "mode": r.mode, "quality": r.quality,
         "correct": r.correct, "answer_text": r.answer_text, "response_ms": r.response_ms,
         "params": None if r.params is None else json.loads(r.params),
         "before": {"ef_hundredths": r.ef_before, "repetitions": r.reps_before,
                    "interval": r.interval_before, "due": _day(r.due_before),
                    "lapses": r.lapses_before, "leech": r.leech_before,
                    "last_reviewed_ms": r.last_reviewed_ms_before},
         "after": {"ef_hundredths": r.ef_after, "repetitions": r.reps_after,
                   "interval": r.interval_after, "due": _day(r.due_after),
                   "lapses": r.lapses_after, "leech": r.leech_after},
         "mistake_id": r.mistake_id, "overridden": r.overridden}
        for r in s.scalars(select(ReviewRow).order_by(ReviewRow.id))
    ]
    labs = [
        {"uid": a.uid, "exercise": a.exercise, "level": a.level, "device": a.device,
         "passed": a.passed, "cases": json.loads(a.cases), "metrics": json.loads(a.metrics),
         "duration_s": a.duration_s, "created_ms": a.created_ms}
        for a in s.scalars(select(LabAttemptRow).order_by(LabAttemptRow.id))
    ]
    flags = [
        {"question_id": f.question_id, "note": f.note, "created_ms": f.created_ms}
        for f in s.scalars(select(FlagRow).order_by(FlagRow.id))
    ]
    lab_cards = [
        {"exercise": c.exercise, "level": c.level, "ef_hundredths": c.ef,
         "repetitions": c.repetitions, "interval": c.interval, "due": _day(c.due),
         "lapses": c.lapses, "leech": c.leech, "created_ms": c.created_ms,
         "last_reviewed_ms": c.last_reviewed_ms, "last_reviewed_day": _day(c.last_reviewed_day),
         "last_passed_ms": c.last_passed_ms, "last_pass_s": c.last_pass_s,
         "last_pass_gradings": c.last_pass_gradings}
        for c in s.scalars(select(LabCardRow).order_by(LabCardRow.exercise, LabCardRow.level))
    ]
    mock_rounds = [
        {"started_ms": m.started_ms, "finished_ms": m.finished_ms, "minutes": m.minutes,
         "score": m.score, "state": json.loads(m.state)}
        for m in s.scalars(select(MockRoundRow).order_by(MockRoundRow.id))
    ]
    return {"format": FORMAT, "version": VERSION,
            "exported_at": utc_now().isoformat(timespec="seconds"),  # honours DOJO_NOW
            "cards": cards, "reviews": reviews, "lab_attempts": labs, "flags": flags,
            "lab_cards": lab_cards, "mock_rounds": mock_rounds}


@dataclass(frozen=True)
class Document:
    cards: list[dict[str, Any]]
    reviews: list[dict[str, Any]]
    lab_attempts: list[dict[str, Any]]
    flags: tuple[dict[str, Any], ...] = ()  # optional key: files from before flags were kept
    lab_cards: tuple[dict[str, Any], ...] = ()  # optional key: files from before schema v4
    mock_rounds: tuple[dict[str, Any], ...] = ()  # optional key: files from before schema v5


class _Checker:
    """Type checks that name the offending place, e.g. reviews[3].quality."""

    def fail(self, where: str, why: str) -> HistoryFormatError:
        return HistoryFormatError(f"invalid history file at {where}: {why}; nothing was imported")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected an object")
        return value

    def field(self, value: dict[str, Any], key: str, where: str) -> Any:
        if key not in value:
            raise self.fail(f"{where}.{key}", "missing")
        return value[key]

    def int_(self, value: dict[str, Any], key: str, where: str, low: int = 0,
             high: int | None = None, nullable: bool = False) -> int | None:
        v = self.field(value, key, where)
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None
                                                                        and v > high):
            span = f"{low}..{high}" if high is not None else f">= {low}"
            raise self.fail(f"{where}.{key}", f"expected an integer {span}, got {v!r}")
        return v

    def bool_(self, value: dict[str, Any], key: str, where: str) -> bool:
        v = self.field(value, key, where)
        if not isinstance(v, bool):
            raise self.fail(f"{where}.{key}", f"expected true/false, got {v!r}")
        return v

    def str_(self, value: dict[str, Any], key: str, where: str, empty: bool = True) -> str:
        v = self.field(value, key, where)
        if not isinstance(v, str) or (not empty and not v):
            raise self.fail(f"{where}.{key}", f"expected a{'' if empty else ' non-empty'} "
                                              f"string, got {v!r}")
        return v

    def day(self, value: dict[str, Any], key: str, where: str,
            nullable: bool = True) -> dt.date | None:
        v = self.field(value, key, where)
        if v is None and nullable:
            return None
        try:
            return dt.date.fromisoformat(v)
        except (TypeError, ValueError):
            raise self.fail(f"{where}.{key}", f"expected a YYYY-MM-DD date, got {v!r}") from None

    def state(self, value: dict[str, Any], where: str) -> None:
        self.int_(value, "ef_hundredths", where, low=MIN_EF)
        self.int_(value, "repetitions", where)
        self.int_(value, "interval", where)
        self.int_(value, "lapses", where)
        self.bool_(value, "leech", where)
        self.day(value, "due", where)


def validate(data: Any) -> Document:
    """Check a whole document; raise HistoryFormatError naming the first bad place."""
    c = _Checker()
    doc = c.obj(data, "top level")
    if doc.get("format") != FORMAT:
        raise c.fail("format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != VERSION:
        raise c.fail("version", f"this app reads version {VERSION}, got {doc.get('version')!r}")
    lists = {}
    for key in ("cards", "reviews", "lab_attempts", "flags", "lab_cards", "mock_rounds"):
        value = doc.get(key, [])
        if not isinstance(value, list):
            raise c.fail(key, "expected a list")
        lists[key] = [c.obj(item, f"{key}[{i}]") for i, item in enumerate(value)]
    ids: set[str] = set()
    for i, card in enumerate(lists["cards"]):
        where = f"cards[{i}]"
        qid = c.str_(card, "question_id", where, empty=False)
        if qid in ids:
            raise c.fail(f"{where}.question_id", f"duplicate card {qid!r}")
        ids.add(qid)
        c.str_(card, "topic", where)
        c.int_(card, "position", where, low=-(2**62))
        c.state(card, where)
        c.bool_(card, "suspended", where)
        c.bool_(card, "retired", where)
        c.day(card, "buried_until", where)
        c.int_(card, "created_ms", where, low=-(2**62))
        c.int_(card, "last_reviewed_ms", where, low=-(2**62), nullable=True)
    uids: set[str] = set()
    for i, review in enumerate(lists["reviews"]):
        where = f"reviews[{i}]"
        uid = c.str_(review, "uid", where, empty=False)
        if uid in uids:
            raise c.fail(f"{where}.uid", f"duplicate uid {uid!r}")
        uids.add(uid)
        qid = c.str_(review, "question_id", where, empty=False)
        if qid not in ids:
            raise c.fail(f"{where}.question_id", f"{qid!r} has no entry in cards")
        c.int_(review, "reviewed_ms", where, low=-(2**62))
        c.day(review, "study_day", where, nullable=False)
        if review.get("mode") not in MODES:
            raise c.fail(f"{where}.mode", f"expected one of {MODES}, got {review.get('mode')!r}")
        c.int_(review, "quality", where, high=5)
        c.bool_(review, "correct", where)
        c.str_(review, "answer_text", where)
        c.int_(review, "response_ms", where)
        params = c.field(review, "params", where)
        if params is not None and not isinstance(params, dict):
            raise c.fail(f"{where}.params", "expected an object or null")
        before = c.obj(c.field(review, "before", where), f"{where}.before")
        c.state(before, f"{where}.before")
        c.int_(before, "last_reviewed_ms", f"{where}.before", low=-(2**62), nullable=True)
        c.state(c.obj(c.field(review, "after", where), f"{where}.after"), f"{where}.after")
        # Added in schema v3; a file exported before has neither (no mistake, not overridden).
        mistake = review.get("mistake_id")
        if mistake is not None and (not isinstance(mistake, str) or not mistake):
            raise c.fail(f"{where}.mistake_id", f"expected a non-empty string or null, got "
                                                f"{mistake!r}")
        if not isinstance(review.get("overridden", False), bool):
            raise c.fail(f"{where}.overridden",
                         f"expected true/false, got {review.get('overridden')!r}")
    lab_uids: set[str] = set()
    for i, attempt in enumerate(lists["lab_attempts"]):
        where = f"lab_attempts[{i}]"
        uid = c.str_(attempt, "uid", where, empty=False)
        if uid in lab_uids:
            raise c.fail(f"{where}.uid", f"duplicate uid {uid!r}")
        lab_uids.add(uid)
        c.str_(attempt, "exercise", where, empty=False)
        c.int_(attempt, "level", where, low=-(2**62))
        c.str_(attempt, "device", where)
        c.bool_(attempt, "passed", where)
        cases = c.field(attempt, "cases", where)
        if not isinstance(cases, list) or not all(isinstance(x, dict) for x in cases):
            raise c.fail(f"{where}.cases", "expected a list of objects")
        c.obj(c.field(attempt, "metrics", where), f"{where}.metrics")
        duration = c.field(attempt, "duration_s", where)
        if isinstance(duration, bool) or not isinstance(duration, int | float):
            raise c.fail(f"{where}.duration_s", f"expected a number, got {duration!r}")
        c.int_(attempt, "created_ms", where, low=-(2**62))
    for i, flag in enumerate(lists["flags"]):
        where = f"flags[{i}]"
        qid = c.str_(flag, "question_id", where, empty=False)
        if qid not in ids:
            raise c.fail(f"{where}.question_id", f"no card {qid!r} in this file")
        c.str_(flag, "note", where, empty=False)
        c.int_(flag, "created_ms", where, low=-(2**62))
    levels: set[tuple[str, int]] = set()
    for i, card in enumerate(lists["lab_cards"]):
        where = f"lab_cards[{i}]"
        level_key = (c.str_(card, "exercise", where, empty=False),
                     int(c.int_(card, "level", where, low=-(2**62)) or 0))
        if level_key in levels:
            raise c.fail(f"{where}.level", f"duplicate lab card {level_key[0]} L{level_key[1]}")
        levels.add(level_key)
        c.state(card, where)
        c.int_(card, "created_ms", where, low=-(2**62))
        for name in ("last_reviewed_ms", "last_passed_ms"):
            c.int_(card, name, where, low=-(2**62), nullable=True)
        c.day(card, "last_reviewed_day", where)
        c.int_(card, "last_pass_gradings", where, nullable=True)
        seconds = c.field(card, "last_pass_s", where)
        if seconds is not None and (isinstance(seconds, bool)
                                    or not isinstance(seconds, int | float) or seconds < 0):
            raise c.fail(f"{where}.last_pass_s", f"expected seconds >= 0 or null, got {seconds!r}")
    starts: set[int] = set()
    for i, mock in enumerate(lists["mock_rounds"]):
        where = f"mock_rounds[{i}]"
        start = int(c.int_(mock, "started_ms", where, low=-(2**62)) or 0)
        if start in starts:
            raise c.fail(f"{where}.started_ms", f"duplicate mock round started at {start}")
        starts.add(start)
        c.int_(mock, "finished_ms", where, low=-(2**62), nullable=True)
        c.int_(mock, "minutes", where, low=1)
        score = c.field(mock, "score", where)
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)
                                  or not 0 <= score <= 1):
            raise c.fail(f"{where}.score", f"expected a number 0..1 or null, got {score!r}")
        c.obj(c.field(mock, "state", where), f"{where}.state")
    return Document(lists["cards"], lists["reviews"], lists["lab_attempts"],
                    tuple(lists["flags"]), tuple(lists["lab_cards"]),
                    tuple(lists["mock_rounds"]))


def _state_columns(card: dict[str, Any]) -> dict[str, Any]:
    return {"ef": card["ef_hundredths"], "repetitions": card["repetitions"],
            "interval": card["interval"], "due": _parse_day(card["due"]),
            "lapses": card["lapses"], "leech": card["leech"],
            "last_reviewed_ms": card["last_reviewed_ms"]}


def _parse_day(value: str | None) -> dt.date | None:
    return None if value is None else dt.date.fromisoformat(value)


def import_history(s: Session, doc: Document) -> ImportSummary:
    """Merge a validated document inside the caller's transaction."""
    local = {c.question_id: c for c in s.scalars(select(CardRow))}
    top = s.scalar(select(func.max(CardRow.position)))
    next_position = 0 if top is None else top + 1
    cards_added = cards_updated = 0
    for card in sorted(doc.cards, key=lambda c: c["position"]):
        row = local.get(card["question_id"])
        if row is None:
            s.add(CardRow(question_id=card["question_id"], topic=card["topic"],
                          position=next_position, suspended=card["suspended"],
                          buried_until=_parse_day(card["buried_until"]),
                          retired=card["retired"], created_ms=card["created_ms"],
                          **_state_columns(card)))
            next_position += 1
            cards_added += 1
        elif (card["last_reviewed_ms"] or -1) > (row.last_reviewed_ms or -1):
            for key, value in _state_columns(card).items():
                setattr(row, key, value)
            cards_updated += 1
    s.flush()
    known = set(s.scalars(select(ReviewRow.uid)))
    reviews_added = 0
    for r in doc.reviews:  # file order is log order
        if r["uid"] in known:
            continue
        b, a = r["before"], r["after"]
        s.add(ReviewRow(
            uid=r["uid"], question_id=r["question_id"], reviewed_ms=r["reviewed_ms"],
            study_day=_parse_day(r["study_day"]), mode=r["mode"], quality=r["quality"],
            correct=r["correct"], answer_text=r["answer_text"], response_ms=r["response_ms"],
            params=None if r["params"] is None else json.dumps(r["params"], sort_keys=True),
            ef_before=b["ef_hundredths"], reps_before=b["repetitions"],
            interval_before=b["interval"], due_before=_parse_day(b["due"]),
            lapses_before=b["lapses"], leech_before=b["leech"],
            last_reviewed_ms_before=b["last_reviewed_ms"],
            ef_after=a["ef_hundredths"], reps_after=a["repetitions"],
            interval_after=a["interval"], due_after=_parse_day(a["due"]),
            lapses_after=a["lapses"], leech_after=a["leech"],
            mistake_id=r.get("mistake_id"), overridden=r.get("overridden", False)))
        reviews_added += 1
    lab_known = set(s.scalars(select(LabAttemptRow.uid)))
    labs_added = 0
    for at in doc.lab_attempts:
        if at["uid"] in lab_known:
            continue
        s.add(LabAttemptRow(
            uid=at["uid"], exercise=at["exercise"], level=at["level"], device=at["device"],
            passed=at["passed"], cases=json.dumps(at["cases"], sort_keys=True),
            metrics=json.dumps(at["metrics"], sort_keys=True),
            duration_s=float(at["duration_s"]), created_ms=at["created_ms"]))
        labs_added += 1
    lab_cards_added, lab_cards_updated = _import_lab_cards(s, doc.lab_cards)
    mock_rounds_added = _import_mock_rounds(s, doc.mock_rounds)
    have: set[tuple[str, str, int]] = {
        (q, n, int(ms)) for q, n, ms in s.execute(
            select(FlagRow.question_id, FlagRow.note, FlagRow.created_ms)).all()}
    flags_added = 0
    for f in doc.flags:
        flag = (str(f["question_id"]), str(f["note"]), int(f["created_ms"]))
        if flag not in have:
            have.add(flag)
            s.add(FlagRow(question_id=flag[0], note=flag[1], created_ms=flag[2]))
            flags_added += 1
    return ImportSummary(
        flags_added=flags_added,
        cards_added=cards_added, cards_updated=cards_updated, reviews_added=reviews_added,
        reviews_skipped=len(doc.reviews) - reviews_added, lab_attempts_added=labs_added,
        lab_attempts_skipped=len(doc.lab_attempts) - labs_added,
        lab_cards_added=lab_cards_added, lab_cards_updated=lab_cards_updated,
        mock_rounds_added=mock_rounds_added,
    )


def _import_mock_rounds(s: Session, rounds: tuple[dict[str, Any], ...]) -> int:
    """Add the rounds this database lacks (same start time = same round); a round still open
    here that the file has finished takes the file's finished state. Returns rounds added."""
    local = {m.started_ms: m for m in s.scalars(select(MockRoundRow))}
    added = 0
    for mock in rounds:
        state = json.dumps(mock["state"], sort_keys=True)
        score = None if mock["score"] is None else float(mock["score"])
        row = local.get(mock["started_ms"])
        if row is None:
            s.add(MockRoundRow(started_ms=mock["started_ms"], finished_ms=mock["finished_ms"],
                               minutes=mock["minutes"], score=score, state=state))
            added += 1
        elif row.finished_ms is None and mock["finished_ms"] is not None:
            row.finished_ms, row.score, row.state = mock["finished_ms"], score, state
    return added


def _import_lab_cards(s: Session, cards: tuple[dict[str, Any], ...]) -> tuple[int, int]:
    """Add the lab cards this database lacks; take a card's schedule from the file when the
    file has graded it later, and its "last passed" when the file passed it later."""
    added = updated = 0
    for card in cards:
        row = s.get(LabCardRow, (card["exercise"], card["level"]))
        schedule = {"ef": card["ef_hundredths"], "repetitions": card["repetitions"],
                    "interval": card["interval"], "due": _parse_day(card["due"]),
                    "lapses": card["lapses"], "leech": card["leech"],
                    "last_reviewed_ms": card["last_reviewed_ms"],
                    "last_reviewed_day": _parse_day(card["last_reviewed_day"])}
        passed = {"last_passed_ms": card["last_passed_ms"], "last_pass_s": card["last_pass_s"],
                  "last_pass_gradings": card["last_pass_gradings"]}
        if row is None:
            s.add(LabCardRow(exercise=card["exercise"], level=card["level"],
                             created_ms=card["created_ms"], **schedule, **passed))
            added += 1
            continue
        changed = False
        if (card["last_reviewed_ms"] or -1) > (row.last_reviewed_ms or -1):
            for key, value in schedule.items():
                setattr(row, key, value)
            changed = True
        if (card["last_passed_ms"] or -1) > (row.last_passed_ms or -1):
            for key, value in passed.items():
                setattr(row, key, value)
            changed = True
        updated += changed
    return added, updated
