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
from collections.abc import Callable
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


# One check of a list entry: (checker, the entry, where it is, the keys seen so far per list).
Check = Callable[[_Checker, dict[str, Any], str, dict[str, set[Any]]], None]
ANY_INT = -(2**62)  # positions and levels: any 63-bit integer
MAX_INT = 2**62  # what SQLite's 64-bit INTEGER stores (past it the insert raised OverflowError)
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last instant a datetime holds
# An SM-2 state the scheduler can step from: its next interval (interval x EF) must stay a date
# (a file with EF 10,000,000 imported, and the card's third review raised OverflowError).
# Anki's largest interval and an EF far above any history's (+0.10 per perfect answer).
MAX_INTERVAL = 36_500
MAX_EF = 1_000


def _int(key: str, low: int = 0, high: int | None = MAX_INT, nullable: bool = False) -> Check:
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        c.int_(v, key, where, low, high, nullable)
    return check


def _ms(key: str, nullable: bool = False) -> Check:
    """A timestamp in ms since 1970 that a datetime can hold."""
    return _int(key, low=0, high=MAX_MS, nullable=nullable)


def _str(key: str, empty: bool = True) -> Check:
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        c.str_(v, key, where, empty)
    return check


def _bool(key: str) -> Check:
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        c.bool_(v, key, where)
    return check


def _date(key: str, nullable: bool = True) -> Check:
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        c.day(v, key, where, nullable)
    return check


def _rule(key: str, ok: Callable[[Any], bool], message: str, *, optional: bool = False,
          default: Any = None) -> Check:
    """A field `ok` accepts (`message` formats the value given); `optional`: absent reads as
    `default` (keys added after the first release)."""
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        value = v.get(key, default) if optional else c.field(v, key, where)
        if not ok(value):
            raise c.fail(f"{where}.{key}", message.format(value))
    return check


def _object(key: str, *checks: Check) -> Check:
    """A field holding an object, its own fields checked by `checks`."""
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        inner, at = c.obj(c.field(v, key, where), f"{where}.{key}"), f"{where}.{key}"
        for each in checks:
            each(c, inner, at, seen)
    return check


def _unique(kind: str, key_of: Callable[[dict[str, Any]], Any], field: str,
            message: Callable[[Any], str]) -> Check:
    """No two entries of the list share `key_of` (recorded under `kind` for `_known`)."""
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        keys, key = seen.setdefault(kind, set()), key_of(v)
        if key in keys:
            raise c.fail(f"{where}.{field}", message(key))
        keys.add(key)
    return check


def _known(field: str, kind: str, message: str) -> Check:
    """The entry's `field` names an entry recorded under `kind` earlier in the file."""
    def check(c: _Checker, v: dict[str, Any], where: str, seen: dict[str, set[Any]]) -> None:
        if v[field] not in seen.get(kind, set()):
            raise c.fail(f"{where}.{field}", message.format(v[field]))
    return check


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


_STATE = (_int("ef_hundredths", low=MIN_EF, high=MAX_EF), _int("repetitions"),
          _int("interval", high=MAX_INTERVAL),
          _int("lapses"), _bool("leech"), _date("due"))
# Every list of the document and the checks of each entry, in the order they are reported.
_SECTIONS: dict[str, tuple[Check, ...]] = {
    "cards": (
        _str("question_id", empty=False),
        _unique("card", lambda v: v["question_id"], "question_id",
                lambda q: f"duplicate card {q!r}"),
        _str("topic"), _int("position", low=ANY_INT), *_STATE, _bool("suspended"),
        _bool("retired"), _date("buried_until"), _ms("created_ms"),
        _ms("last_reviewed_ms", nullable=True),
    ),
    "reviews": (
        _str("uid", empty=False),
        _unique("review", lambda v: v["uid"], "uid", lambda u: f"duplicate uid {u!r}"),
        _str("question_id", empty=False),
        _known("question_id", "card", "{!r} has no entry in cards"),
        _ms("reviewed_ms"), _date("study_day", nullable=False),
        _rule("mode", lambda m: m in MODES, f"expected one of {MODES}, got {{!r}}", optional=True),
        _int("quality", high=5), _bool("correct"), _str("answer_text"), _int("response_ms"),
        _rule("params", lambda p: p is None or isinstance(p, dict), "expected an object or null"),
        _object("before", *_STATE, _ms("last_reviewed_ms", nullable=True)),
        _object("after", *_STATE),
        # Added in schema v3; a file exported before has neither (no mistake, not overridden).
        _rule("mistake_id", lambda m: m is None or (isinstance(m, str) and bool(m)),
              "expected a non-empty string or null, got {!r}", optional=True),
        _rule("overridden", lambda o: isinstance(o, bool), "expected true/false, got {!r}",
              optional=True, default=False),
    ),
    "lab_attempts": (
        _str("uid", empty=False),
        _unique("lab attempt", lambda v: v["uid"], "uid", lambda u: f"duplicate uid {u!r}"),
        _str("exercise", empty=False), _int("level", low=ANY_INT), _str("device"),
        _bool("passed"),
        _rule("cases", lambda x: isinstance(x, list) and all(isinstance(e, dict) for e in x),
              "expected a list of objects"),
        _object("metrics"),
        _rule("duration_s", _is_number, "expected a number, got {!r}"),
        _ms("created_ms"),
    ),
    "flags": (
        _str("question_id", empty=False),
        _known("question_id", "card", "no card {!r} in this file"),
        _str("note", empty=False), _ms("created_ms"),
    ),
    "lab_cards": (
        _str("exercise", empty=False), _int("level", low=ANY_INT),
        _unique("lab card", lambda v: (v["exercise"], v["level"]), "level",
                lambda k: f"duplicate lab card {k[0]} L{k[1]}"),
        *_STATE, _ms("created_ms"),
        _ms("last_reviewed_ms", nullable=True),
        _ms("last_passed_ms", nullable=True), _date("last_reviewed_day"),
        _int("last_pass_gradings", nullable=True),
        _rule("last_pass_s", lambda x: x is None or (_is_number(x) and x >= 0),
              "expected seconds >= 0 or null, got {!r}"),
    ),
    "mock_rounds": (
        _ms("started_ms"),
        _unique("mock round", lambda v: v["started_ms"], "started_ms",
                lambda t: f"duplicate mock round started at {t}"),
        _ms("finished_ms", nullable=True), _int("minutes", low=1),
        _rule("score", lambda x: x is None or (_is_number(x) and 0 <= x <= 1),
              "expected a number 0..1 or null, got {!r}"),
        _object("state"),
    ),
}


def validate(data: Any) -> Document:
    """Check a whole document; raise HistoryFormatError naming the first bad place: the
    format and version, that every list is a list of objects, then each list's entries by
    the checks of `_SECTIONS`."""
    c = _Checker()
    doc = c.obj(data, "top level")
    if doc.get("format") != FORMAT:
        raise c.fail("format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != VERSION:
        raise c.fail("version", f"this app reads version {VERSION}, got {doc.get('version')!r}")
    lists = {}
    for key in _SECTIONS:
        value = doc.get(key, [])
        if not isinstance(value, list):
            raise c.fail(key, "expected a list")
        lists[key] = [c.obj(item, f"{key}[{i}]") for i, item in enumerate(value)]
    seen: dict[str, set[Any]] = {}
    for key, checks in _SECTIONS.items():
        for i, entry in enumerate(lists[key]):
            for check in checks:
                check(c, entry, f"{key}[{i}]", seen)
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
    cards_added, cards_updated = _import_cards(s, doc.cards)
    reviews_added = _import_reviews(s, doc.reviews)
    labs_added = _import_lab_attempts(s, doc.lab_attempts)
    lab_cards_added, lab_cards_updated = _import_lab_cards(s, doc.lab_cards)
    mock_rounds_added = _import_mock_rounds(s, doc.mock_rounds)
    flags_added = _import_flags(s, doc.flags)
    return ImportSummary(
        flags_added=flags_added,
        cards_added=cards_added, cards_updated=cards_updated, reviews_added=reviews_added,
        reviews_skipped=len(doc.reviews) - reviews_added, lab_attempts_added=labs_added,
        lab_attempts_skipped=len(doc.lab_attempts) - labs_added,
        lab_cards_added=lab_cards_added, lab_cards_updated=lab_cards_updated,
        mock_rounds_added=mock_rounds_added,
    )


def _import_cards(s: Session, cards: list[dict[str, Any]]) -> tuple[int, int]:
    """Add the cards this database lacks (after its last position, in the file's order); take
    a card's schedule from the file when the file reviewed it later. Returns (added, updated)."""
    local = {c.question_id: c for c in s.scalars(select(CardRow))}
    top = s.scalar(select(func.max(CardRow.position)))
    next_position = 0 if top is None else top + 1
    added = updated = 0
    for card in sorted(cards, key=lambda c: c["position"]):
        row = local.get(card["question_id"])
        if row is None:
            s.add(CardRow(question_id=card["question_id"], topic=card["topic"],
                          position=next_position, suspended=card["suspended"],
                          buried_until=_parse_day(card["buried_until"]),
                          retired=card["retired"], created_ms=card["created_ms"],
                          **_state_columns(card)))
            next_position += 1
            added += 1
        elif (card["last_reviewed_ms"] or -1) > (row.last_reviewed_ms or -1):
            for key, value in _state_columns(card).items():
                setattr(row, key, value)
            updated += 1
    s.flush()
    return added, updated


def _import_reviews(s: Session, reviews: list[dict[str, Any]]) -> int:
    """Append the answers whose uid this log lacks, in file order (the log's order)."""
    known = set(s.scalars(select(ReviewRow.uid)))
    added = 0
    for r in reviews:
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
        added += 1
    return added


def _import_lab_attempts(s: Session, attempts: list[dict[str, Any]]) -> int:
    """Add the lab attempts whose uid this database lacks."""
    known = set(s.scalars(select(LabAttemptRow.uid)))
    added = 0
    for at in attempts:
        if at["uid"] in known:
            continue
        s.add(LabAttemptRow(
            uid=at["uid"], exercise=at["exercise"], level=at["level"], device=at["device"],
            passed=at["passed"], cases=json.dumps(at["cases"], sort_keys=True),
            metrics=json.dumps(at["metrics"], sort_keys=True),
            duration_s=float(at["duration_s"]), created_ms=at["created_ms"]))
        added += 1
    return added


def _import_flags(s: Session, flags: tuple[dict[str, Any], ...]) -> int:
    """Add the flags this database lacks (same card, note and time = same flag)."""
    have: set[tuple[str, str, int]] = {
        (q, n, int(ms)) for q, n, ms in s.execute(
            select(FlagRow.question_id, FlagRow.note, FlagRow.created_ms)).all()}
    added = 0
    for f in flags:
        flag = (str(f["question_id"]), str(f["note"]), int(f["created_ms"]))
        if flag not in have:
            have.add(flag)
            s.add(FlagRow(question_id=flag[0], note=flag[1], created_ms=flag[2]))
            added += 1
    return added


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
