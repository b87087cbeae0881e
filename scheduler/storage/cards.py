"""Store part: question cards, flags, today's queue, answering and undo."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from scheduler import fsrs_memory
from scheduler.days import from_ms, to_ms, utc_now
from scheduler.errors import AnsweredElsewhereError, StoreError, UnknownCardError
from scheduler.fsrs_memory import Memory
from scheduler.models import CardRow, FlagRow, ReviewRow
from scheduler.next_states import NextState, Outlook, next_states
from scheduler.queue import read_queue
from scheduler.quick import read_cards
from scheduler.records import (
    MODES,
    Card,
    Flag,
    Mode,
    Queue,
    Review,
    ReviewResult,
    Scheduled,
    Settings,
    SyncResult,
    UndoResult,
)
from scheduler.sm2 import CardState, check_quality
from scheduler.storage.base import json_object, raw_connection
from scheduler.storage.memory import fsrs_parameters, recompute
from scheduler.storage.settings import SettingsPart


def _card(row: CardRow) -> Card:
    return Card(
        question_id=row.question_id,
        topic=row.topic,
        state=CardState(row.ef, row.repetitions, row.interval),
        due=row.due,
        lapses=row.lapses,
        leech=row.leech,
        suspended=row.suspended,
        buried_until=row.buried_until,
        retired=row.retired,
        created_at=from_ms(row.created_ms),
        last_reviewed_at=None if row.last_reviewed_ms is None else from_ms(row.last_reviewed_ms),
        memory=_memory(row),
    )


def _memory(row: CardRow) -> Memory | None:
    if row.fsrs_stability is None or row.fsrs_difficulty is None or row.fsrs_last_ms is None:
        return None
    return Memory(row.fsrs_stability, row.fsrs_difficulty, from_ms(row.fsrs_last_ms))


def _set_memory(row: CardRow, memory: Memory | None) -> None:
    row.fsrs_stability = None if memory is None else memory.stability
    row.fsrs_difficulty = None if memory is None else memory.difficulty
    row.fsrs_last_ms = None if memory is None else to_ms(memory.last_review)


def _review(row: ReviewRow) -> Review:
    return Review(
        id=row.id,
        uid=row.uid,
        question_id=row.question_id,
        reviewed_at=from_ms(row.reviewed_ms),
        day=row.study_day,
        mode=row.mode,  # type: ignore[arg-type]  # constrained on write
        quality=row.quality,
        correct=row.correct,
        answer_text=row.answer_text,
        response_ms=row.response_ms,
        params=None if row.params is None else json.loads(row.params),
        before=CardState(row.ef_before, row.reps_before, row.interval_before),
        after=CardState(row.ef_after, row.reps_after, row.interval_after),
        due_before=row.due_before,
        due_after=row.due_after,
        mistake_id=row.mistake_id,
        overridden=row.overridden,
    )



class CardsPart(SettingsPart):
    """The question cards and their answer log."""

    def update_settings(self, now: dt.datetime | None = None, **changes: Any) -> Settings:
        """`SettingsPart.update_settings`; a scheduler switch recomputes every card's FSRS
        memory from its answers in time order."""
        before = self.settings().scheduler
        new = super().update_settings(now, **changes)
        if new.scheduler != before:
            self.recompute_memories()
        return new

    # ------------------------------------------------------------------------------- cards
    def sync_cards(
        self, questions: Iterable[tuple[str, str]], *, retire_missing: bool = False
    ) -> SyncResult:
        """Create a card for every new (question id, topic), update topics that changed.

        Never-reviewed cards are introduced in the order given, at every sync: a question
        pack added later is interleaved with the remaining new cards (as the bank orders
        it) instead of waiting behind all of them. With `retire_missing`, cards whose
        question is absent are retired (kept with their history, never queued) and come
        back if the question returns. Pass the whole bank.
        """
        wanted: dict[str, str] = {}
        for qid, topic in questions:
            if not isinstance(qid, str) or not qid:
                raise ValueError(f"question id must be a non-empty string, got {qid!r}")
            wanted[qid] = str(topic)
        added = updated = retired = 0
        now_ms = to_ms(utc_now())
        with self._write() as s:
            existing = {
                r.question_id: (r.topic, r.retired)
                for r in s.execute(select(CardRow.question_id, CardRow.topic, CardRow.retired))
            }
            position = s.scalar(select(func.max(CardRow.position)))
            position = -1 if position is None else position
            for qid, topic in wanted.items():
                if qid not in existing:
                    position += 1
                    s.add(CardRow(question_id=qid, topic=topic, position=position, ef=250,
                                  repetitions=0, interval=0, due=None, lapses=0, leech=False,
                                  suspended=False, buried_until=None, retired=False,
                                  created_ms=now_ms))
                    added += 1
                elif existing[qid] != (topic, False):
                    s.execute(update(CardRow).where(CardRow.question_id == qid)
                              .values(topic=topic, retired=False))
                    updated += 1
            s.flush()
            self._resequence_new(s, list(wanted))
            if retire_missing:
                gone = [q for q, (_, was) in existing.items() if q not in wanted and not was]
                for chunk in range(0, len(gone), 500):
                    s.execute(update(CardRow).where(
                        CardRow.question_id.in_(gone[chunk:chunk + 500])).values(retired=True))
                retired = len(gone)
        return SyncResult(added, updated, retired)

    @staticmethod
    def _resequence_new(s: Session, order: list[str]) -> None:
        """Give the never-reviewed cards among `order` their positions in that order (the
        same set of positions, permuted, so reviewed and retired cards keep theirs)."""
        rank = {qid: i for i, qid in enumerate(order)}
        rows = [(qid, pos) for qid, pos in s.execute(
            select(CardRow.question_id, CardRow.position).where(CardRow.due.is_(None))
        ) if qid in rank]
        slots = sorted(pos for _, pos in rows)
        wanted = sorted(rows, key=lambda r: rank[r[0]])
        changes = [{"question_id": qid, "position": slot}
                   for (qid, pos), slot in zip(wanted, slots, strict=True) if pos != slot]
        if changes:
            s.execute(update(CardRow), changes)

    def card(self, question_id: str) -> Card:
        """The card for a question id; UnknownCardError if there is none."""
        with self._read() as s:
            return _card(self._get(s, question_id))

    def answered_today(self, question_id: str, now: dt.datetime | None = None) -> bool:
        """Whether the card was answered on today's study day and is not due again today: a
        scheduled review another window answered meanwhile. Plain SQL on a pooled connection,
        no ORM session: the app asks before every card it shows (~0.02 ms, against ~0.6 ms for
        `card()` and `settings()`, 2-3 ms of an answer on a loaded machine). False for an
        unknown card."""
        moment = now or utc_now()
        try:
            conn = self._engine.raw_connection()
            try:
                cursor = conn.cursor()
                row = cursor.execute("SELECT due, last_reviewed_ms FROM cards "
                                     "WHERE question_id = ?", (question_id,)).fetchone()
                if row is None or row[0] is None or row[1] is None:
                    return False  # unknown, or never answered anywhere
                settings = cursor.execute("SELECT key, value FROM settings").fetchall()
            finally:
                conn.close()  # back to the pool
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path} could not be read ({exc})") from exc
        cfg = self._settings_from(settings)
        day = self.study_day(moment, cfg)
        due = dt.date.fromisoformat(row[0])
        return due > day and self.study_day(from_ms(row[1]), cfg) == day

    def cards(self) -> list[Card]:
        """Every card, in new-card order."""
        with self._read() as s:  # the home screen's quick read runs the same SQL
            return read_cards(raw_connection(s))

    @staticmethod
    def _get(s: Session, question_id: str) -> CardRow:
        row = s.get(CardRow, question_id)
        if row is None:
            raise UnknownCardError(f"no card for question id {question_id!r}")
        return row

    def suspend(self, question_id: str) -> None:
        """Take a card out of every queue until unsuspended."""
        self._set(question_id, suspended=True)

    def unsuspend(self, question_id: str) -> None:
        self._set(question_id, suspended=False)

    def bury(self, question_id: str, now: dt.datetime | None = None) -> None:
        """Hide a card for the rest of today's study day."""
        self._set(question_id, buried_until=self.study_day(now))

    def _set(self, question_id: str, **values: Any) -> None:
        with self._write() as s:
            self._get(s, question_id)
            s.execute(update(CardRow).where(CardRow.question_id == question_id).values(**values))

    def flag(self, question_id: str, note: str, now: dt.datetime | None = None) -> int:
        """Record that a question looks wrong (kept for the author); returns the flag id. The
        same note on the same question is kept once (its first id is returned)."""
        if not isinstance(note, str) or not note.strip():
            raise ValueError("a flag needs a note saying what looks wrong")
        with self._write() as s:
            self._get(s, question_id)
            same = s.scalar(select(FlagRow.id).where(FlagRow.question_id == question_id,
                                                     FlagRow.note == note.strip()))
            if same is not None:
                return int(same)
            row = FlagRow(question_id=question_id, note=note.strip(),
                          created_ms=to_ms(now or utc_now()))
            s.add(row)
            s.flush()
            return row.id

    def flags(self, question_id: str | None = None) -> list[Flag]:
        query = select(FlagRow).order_by(FlagRow.id)
        if question_id is not None:
            query = query.where(FlagRow.question_id == question_id)
        with self._read() as s:
            return [Flag(r.id, r.question_id, r.note, from_ms(r.created_ms))
                    for r in s.scalars(query)]

    def clear_flags(self, question_id: str) -> int:
        with self._write() as s:
            ids = list(s.scalars(select(FlagRow.id).where(FlagRow.question_id == question_id)))
            s.execute(delete(FlagRow).where(FlagRow.id.in_(ids)))
            return len(ids)

    # ------------------------------------------------------------------------------- queue
    def today_queue(
        self,
        now: dt.datetime | None = None,
        new_limit: int | None = None,
        review_limit: int | None = None,
    ) -> Queue:
        """Today's queue: due reviews oldest first, then new cards, then re-drill.

        New cards fill up to the daily new limit (less those already introduced today), and
        reviews plus new cards stay within the daily review limit (less answers already
        given today). Re-drill lists cards whose latest graded answer today is below 4.
        Suspended, buried and retired cards never appear. Limits default to the settings.
        """
        cfg = self.settings()
        day = self.study_day(now, cfg)
        new_cap = cfg.new_limit if new_limit is None else new_limit
        plan = self.plan() if new_limit is None else None
        review_cap = cfg.review_limit if review_limit is None else review_limit
        with self._read() as s:  # the lean `dojo due` runs the same SQL (scheduler.queue)
            return read_queue(raw_connection(s), day, new_cap, review_cap, plan)

    # ------------------------------------------------------------------------------ answer
    def answer(
        self,
        question_id: str,
        quality: int,
        *,
        correct: bool,
        answer_text: str,
        response_ms: int,
        params: dict[str, Any] | None = None,
        now: dt.datetime | None = None,
        mode: Mode = "review",
        mistake_id: str | None = None,
        overridden: bool = False,
    ) -> ReviewResult:
        """Record one answer: the card update and its log row commit in one transaction.

        `mode="review"` applies SM-2 to a card that is due (or new) today; a failing grade
        (< 3) is a lapse, and the card becomes a leech at the configured number of lapses.
        `"redrill"` (today's re-drill) and `"cram"` (practice outside the schedule) are
        logged but leave the schedule untouched. `mistake_id` names the mistake a wrong
        answer matched (kept for "recurring mistakes"); `overridden` marks a wrong verdict the
        learner counted right after a typo. Raises ValueError for a bad grade, mode or a
        review of a card not due today, UnknownCardError for an unknown question id.
        """
        quality = check_quality(quality)
        params_json = _checked_answer_args(mode, response_ms, params, mistake_id)
        moment = now or utc_now()
        cfg = self.settings()
        day = self.study_day(moment, cfg)
        with self._write() as s:
            card = self._get(s, question_id)
            old = _card(card).scheduled
            chosen = self._chosen(s, card, mode, moment, day, cfg, quality)
            new, redrill = chosen.scheduled, chosen.redrill
            _set_memory(card, self._memory_after(s, card, chosen.memory, moment, quality))
            before, after = old.state, new.state
            snapshot = _reschedule(card, old, new, moment)
            due, lapses, leech = new.due, new.lapses, new.leech
            row = ReviewRow(
                uid=uuid.uuid4().hex, question_id=question_id, reviewed_ms=to_ms(moment),
                study_day=day, mode=mode, quality=quality, correct=bool(correct),
                answer_text=str(answer_text), response_ms=response_ms, params=params_json,
                ef_before=before.ef_hundredths, reps_before=before.repetitions,
                interval_before=before.interval, due_before=snapshot[0],
                lapses_before=snapshot[1], leech_before=snapshot[2],
                last_reviewed_ms_before=snapshot[3],
                ef_after=after.ef_hundredths, reps_after=after.repetitions,
                interval_after=after.interval, due_after=due, lapses_after=lapses,
                leech_after=leech, mistake_id=mistake_id, overridden=bool(overridden),
            )
            s.add(row)
            s.flush()
            self._inside_answer_transaction()
        return ReviewResult(
            review_id=row.id, question_id=question_id, mode=mode, quality=quality,
            correct=bool(correct), day=day, before=before, after=after, due=due,
            lapses=lapses, leech=leech, became_leech=leech and not snapshot[2],
            needs_redrill=redrill,
        )

    def _memory_after(self, s: Session, card: CardRow, memory: Memory | None,
                      moment: dt.datetime, quality: int) -> Memory | None:
        """The card's FSRS memory after this answer: `memory`, or for an answer dated before
        the card's latest (a clock moved back) the time-ordered replay, as after an import."""
        if card.fsrs_last_ms is not None and to_ms(moment) < card.fsrs_last_ms:
            return self._replay_card(s, card.question_id, (moment, quality))
        return memory

    def _chosen(self, s: Session, card: CardRow, mode: Mode, moment: dt.datetime,
                day: dt.date, cfg: Settings, quality: int) -> NextState:
        """The card's next state for `quality`; a review of a card not due today is refused,
        as answered elsewhere when another window answered it today."""
        try:
            return self._next_states(s, card, mode, moment, day, cfg)[quality]
        except ValueError as exc:
            question_id = card.question_id
            if mode == "review" and card.due is not None and card.due > day and s.scalars(
                select(ReviewRow.id).where(ReviewRow.question_id == question_id,
                                           ReviewRow.study_day == day,
                                           ReviewRow.mode == "review").limit(1)
            ).first() is not None:
                raise AnsweredElsewhereError(
                    f"{question_id} was already answered today (in another window?) and "
                    f"is not due until {card.due.isoformat()}; this answer was not recorded"
                ) from None
            raise ValueError(f"{question_id}: {exc}") from None

    def _next_states(self, s: Session, card: CardRow, mode: Mode, moment: dt.datetime,
                     day: dt.date, cfg: Settings) -> dict[int, NextState]:
        """Every grade's next state for this card now: what `answer` saves and `preview`
        shows (one call, so the two cannot disagree)."""
        memory = _memory(card)
        if memory is not None and memory.last_review > moment:  # answered "later" already
            answers = [a for a in self._answers(s, card.question_id) if a[0] <= moment]
            memory = fsrs_memory.replay(answers, self._fsrs_scheduler(s))
        return next_states(_card(card).scheduled, memory, mode, moment, day, cfg,
                           fsrs_parameters(s))

    def _fsrs_scheduler(self, s: Session) -> Any:
        return fsrs_memory.make_scheduler(fsrs_parameters(s))

    @staticmethod
    def _answers(s: Session, question_id: str) -> list[tuple[dt.datetime, int]]:
        return [(from_ms(ms), q) for ms, q in s.execute(
            select(ReviewRow.reviewed_ms, ReviewRow.quality)
            .where(ReviewRow.question_id == question_id).order_by(ReviewRow.id)).all()]

    def _replay_card(self, s: Session, question_id: str,
                     extra: tuple[dt.datetime, int] | None) -> Memory | None:
        """The card's memory from its logged answers (plus `extra`) in time order."""
        answers = self._answers(s, question_id) + ([extra] if extra is not None else [])
        return fsrs_memory.replay(answers, self._fsrs_scheduler(s))

    def preview(self, question_id: str, mode: Mode = "review",
                now: dt.datetime | None = None) -> Outlook:
        """What each grade would save for this card answered now in `mode` (the grade bar),
        from the same `next_states` call `answer` makes; UnknownCardError for an unknown id."""
        moment = now or utc_now()
        cfg = self.settings()
        day = self.study_day(moment, cfg)
        with self._read() as s:
            card = self._get(s, question_id)
            memory = _memory(card)
            recall = None if memory is None else fsrs_memory.recall(
                memory, moment, self._fsrs_scheduler(s))
            try:
                states = self._next_states(s, card, mode, moment, day, cfg)
            except ValueError as exc:
                return Outlook(cfg.scheduler, _card(card).scheduled, {}, recall, str(exc))
            return Outlook(cfg.scheduler, _card(card).scheduled, states, recall)

    def recompute_memories(self, *, reschedule: bool = False) -> int:
        """Recompute every card's FSRS memory from the answer log in time order (after a
        scheduler switch, a parameter fit or an import); returns the cards with one.

        With `reschedule` under scheduler=fsrs (after `dojo fsrs fit`, as Anki does on a
        parameter change), every introduced card is due FSRS's interval after the study day
        of its latest answer."""
        cfg = self.settings()
        with self._write() as s:
            found = recompute(s)
            if not (reschedule and cfg.scheduler == "fsrs"):
                return found
            fsrs = fsrs_memory.make_scheduler(fsrs_parameters(s), cfg.desired_retention)
            for row in s.scalars(select(CardRow).where(CardRow.due.is_not(None))):
                memory = _memory(row)
                if memory is None:
                    continue
                days = fsrs_memory.interval(memory, fsrs)
                row.interval = days
                row.due = self.study_day(memory.last_review, cfg) + dt.timedelta(days=days)
            return found

    def _inside_answer_transaction(self) -> None:
        """Test seam: runs after the answer is written, before it commits."""

    def undo(
        self, now: dt.datetime | None = None, review_id: int | None = None
    ) -> UndoResult | None:
        """Undo the latest answer of today's study day; call again to undo further.

        With `review_id` (what `answer` returned), undo exactly that answer whatever the day,
        as a session does after the rollover hour passes mid-session, provided it is still
        its card's latest answer. Restores the card's schedule exactly as it was and deletes
        the log row. Returns None when there is nothing (left) to undo.
        """
        with self._write() as s:
            if review_id is None:
                row = s.scalars(
                    select(ReviewRow).where(ReviewRow.study_day == self.study_day(now))
                    .order_by(ReviewRow.id.desc()).limit(1)
                ).first()
            else:
                row = s.get(ReviewRow, review_id)
                if row is not None and s.scalars(
                    select(ReviewRow.id).where(ReviewRow.question_id == row.question_id,
                                               ReviewRow.id > row.id).limit(1)
                ).first() is not None:
                    return None  # answered again since (another process): would lose that
            if row is None:
                return None
            card = self._get(s, row.question_id)
            card.ef, card.repetitions, card.interval = (
                row.ef_before, row.reps_before, row.interval_before)
            card.due, card.lapses, card.leech = row.due_before, row.lapses_before, row.leech_before
            card.last_reviewed_ms = row.last_reviewed_ms_before
            undone = (row.id, row.question_id, row.mode, row.quality)
            s.delete(row)
            s.flush()  # the card's memory is the replay of the answers left
            _set_memory(card, self._replay_card(s, undone[1], None))
            result = UndoResult(undone[0], undone[1], undone[2],  # type: ignore[arg-type]
                                undone[3], _card(card))
        return result

    def history(self, question_id: str) -> list[Review]:
        """Every logged answer for a question, oldest first."""
        with self._read() as s:
            self._get(s, question_id)
            return [_review(r) for r in s.scalars(
                select(ReviewRow).where(ReviewRow.question_id == question_id)
                .order_by(ReviewRow.id))]


def _checked_answer_args(mode: object, response_ms: object, params: dict[str, Any] | None,
                         mistake_id: object) -> str | None:
    """Refuse a bad mode, response time or mistake id (ValueError); the params as JSON."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(response_ms, bool) or not isinstance(response_ms, int) or response_ms < 0:
        raise ValueError(f"response_ms must be a whole number >= 0, got {response_ms!r}")
    params_json = json_object(params, "params")
    if mistake_id is not None and (not isinstance(mistake_id, str) or not mistake_id):
        raise ValueError(f"mistake_id must be a non-empty string or None, got {mistake_id!r}")
    return params_json


def _reschedule(card: CardRow, old: Scheduled, new: Scheduled,
                moment: dt.datetime) -> tuple[dt.date | None, int, bool, int | None]:
    """Write the new schedule onto the card when the answer changed it; returns the card's
    due, lapses, leech and last-reviewed time as they were (the log row's "before")."""
    snapshot = (card.due, card.lapses, card.leech, card.last_reviewed_ms)
    if new != old:
        after = new.state
        card.ef, card.repetitions, card.interval = (
            after.ef_hundredths, after.repetitions, after.interval)
        card.due, card.lapses, card.leech = new.due, new.lapses, new.leech
        card.last_reviewed_ms = to_ms(moment)
    return snapshot
