"""Store part: graded lab attempts and the lab cards (rebuild schedule) their passes make."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select

from scheduler import transition
from scheduler.days import from_ms, to_ms, utc_now
from scheduler.models import (
    CardRow,
    LabAttemptRow,
    LabCardRow,
    LabRecallRow,
    SettingRow,
)
from scheduler.records import LabAttempt, LabCard, LabCardResult, Scheduled
from scheduler.sm2 import CardState, check_quality
from scheduler.storage.base import json_object
from scheduler.storage.settings import SettingsPart


def _lab_attempt(row: LabAttemptRow) -> LabAttempt:
    return LabAttempt(
        id=row.id,
        exercise=row.exercise,
        level=row.level,
        device=row.device,
        passed=row.passed,
        cases=json.loads(row.cases),
        metrics=json.loads(row.metrics),
        duration_s=row.duration_s,
        created_at=from_ms(row.created_ms),
    )


def _lab_card(row: LabCardRow) -> LabCard:
    return LabCard(
        exercise=row.exercise,
        level=row.level,
        state=CardState(row.ef, row.repetitions, row.interval),
        due=row.due,
        lapses=row.lapses,
        leech=row.leech,
        created_at=from_ms(row.created_ms),
        last_reviewed_day=row.last_reviewed_day,
        last_passed_at=None if row.last_passed_ms is None else from_ms(row.last_passed_ms),
        last_pass_s=row.last_pass_s,
        last_pass_gradings=row.last_pass_gradings,
    )


_LAB_STATE_KEY = "lab_state:"  # + exercise id: LabPart.lab_state, in the settings table


class LabPart(SettingsPart):
    """Lab attempts and lab cards."""

    def _repair_lab_cards(self) -> None:
        """A passed level without a lab card (a grading killed between its attempt and its card
        by a version that stored them apart) gets its card, as its first pass would have made it
        (graded 4 on that pass's study day, as the v4 upgrade does for older passes)."""
        has_card = select(LabCardRow.exercise).where(
            LabCardRow.exercise == LabAttemptRow.exercise,
            LabCardRow.level == LabAttemptRow.level).exists()
        with self._read() as s:
            missing = s.execute(
                select(LabAttemptRow.exercise, LabAttemptRow.level,
                       func.min(LabAttemptRow.created_ms), func.max(LabAttemptRow.created_ms))
                .where(LabAttemptRow.passed, ~has_card)
                .group_by(LabAttemptRow.exercise, LabAttemptRow.level)).all()
        if not missing:
            return
        cfg = self.settings()
        with self._write() as s:
            for exercise, level, first_ms, last_ms in missing:
                if s.get(LabCardRow, (exercise, level)) is not None:
                    continue  # made meanwhile by another process
                day = self.study_day(from_ms(first_ms), cfg)
                new, _ = transition.apply(
                    Scheduled(CardState.new(), None, 0, False), 4, "review", day, cfg)
                s.add(LabCardRow(
                    exercise=exercise, level=int(level), ef=new.state.ef_hundredths,
                    repetitions=new.state.repetitions, interval=new.state.interval,
                    due=new.due, lapses=new.lapses, leech=new.leech, created_ms=first_ms,
                    last_reviewed_ms=first_ms, last_reviewed_day=day, last_passed_ms=last_ms))
        names = ", ".join(f"{e} L{lv}" for e, lv, _, _ in missing)
        self.warnings.append(
            f"repaired: {names} passed without a lab card (an interrupted grading); "
            "now on the rebuild schedule.")

    # -------------------------------------------------------------------------- lab attempts
    def record_lab_attempt(
        self,
        exercise: str,
        level: int,
        device: str,
        passed: bool,
        cases: list[dict[str, Any]],
        metrics: dict[str, Any],
        duration_s: float,
        now: dt.datetime | None = None,
    ) -> int:
        """Store one graded lab run (per-case results and metrics as JSON); returns its id."""
        if not isinstance(exercise, str) or not exercise:
            raise ValueError("exercise must be a non-empty string")
        if isinstance(level, bool) or not isinstance(level, int):
            raise ValueError(f"level must be an int, got {level!r}")
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise ValueError("cases must be a list of dicts")
        try:
            cases_json = json.dumps(cases, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cases must be JSON-serialisable: {exc}") from exc
        metrics_json = json_object(metrics, "metrics")
        with self._write() as s:
            row = LabAttemptRow(
                uid=uuid.uuid4().hex, exercise=exercise, level=level, device=str(device),
                passed=bool(passed), cases=cases_json, metrics=metrics_json or "{}",
                duration_s=float(duration_s), created_ms=to_ms(now or utc_now()),
            )
            s.add(row)
            s.flush()
            return row.id

    def lab_attempts(self, exercise: str | None = None) -> list[LabAttempt]:
        """Recorded lab attempts, oldest first, optionally for one exercise."""
        query = select(LabAttemptRow).order_by(LabAttemptRow.id)
        if exercise is not None:
            query = query.where(LabAttemptRow.exercise == exercise)
        with self._read() as s:
            return [_lab_attempt(r) for r in s.scalars(query)]

    # ----------------------------------------------------------------------------- lab cards
    def grade_lab_card(
        self,
        exercise: str,
        level: int,
        quality: int,
        *,
        passed: bool,
        rebuild: bool,
        pass_s: float | None = None,
        gradings: int | None = None,
        now: dt.datetime | None = None,
    ) -> LabCardResult:
        """Apply a lab level's pass (or an abandoned rebuild, `passed=False`) to its card.

        The level's first pass creates the card, and is its first review (graded `quality` by
        the same `transition.apply` as a question). After that only a rebuild (`rebuild=True`)
        grades the card, and only once a study day and not before it is due: any other pass
        just updates "last passed" (`pass_s`: time to pass when timed; `gradings` needed).
        """
        quality = check_quality(quality)
        if isinstance(level, bool) or not isinstance(level, int):
            raise ValueError(f"level must be an int, got {level!r}")
        moment = now or utc_now()
        cfg = self.settings()
        day = self.study_day(moment, cfg)
        created = graded = False
        why = ""
        with self._write() as s:
            row = s.get(LabCardRow, (exercise, level))
            if row is None:
                if not passed:
                    return LabCardResult(None, False, False, quality,
                                         f"{exercise} L{level} was never passed: no card yet")
                row = LabCardRow(exercise=exercise, level=level, ef=CardState.new().ef_hundredths,
                                 repetitions=0, interval=0, due=None, lapses=0, leech=False,
                                 created_ms=to_ms(moment))
                s.add(row)
                created = True
            if passed:
                row.last_passed_ms = to_ms(moment)
                row.last_pass_s = None if pass_s is None else round(float(pass_s), 1)
                row.last_pass_gradings = gradings
            if not created and not rebuild:
                why = "a pass outside a rebuild leaves the schedule as it was"
            elif not created and row.last_reviewed_day == day:
                why = "already graded today"
            elif not created and row.due is not None and row.due > day:
                why = f"not due until {row.due.isoformat()}: practice, the schedule is unchanged"
            else:
                old = Scheduled(CardState(row.ef, row.repetitions, row.interval),
                                row.due, row.lapses, row.leech)
                new, _ = transition.apply(old, quality, "review", day, cfg)
                row.ef, row.repetitions, row.interval = (
                    new.state.ef_hundredths, new.state.repetitions, new.state.interval)
                row.due, row.lapses, row.leech = new.due, new.lapses, new.leech
                row.last_reviewed_ms, row.last_reviewed_day = to_ms(moment), day
                graded = True
            s.flush()
            card = _lab_card(row)
        return LabCardResult(card, created, graded, quality, why)

    def lab_levels_passed(self) -> set[tuple[str, int]]:
        """(exercise, level) of every level with a passing attempt."""
        from scheduler.quick import lab_levels_passed
        from scheduler.storage.base import raw_connection

        with self._read() as s:  # the home screen's quick read runs the same SQL
            return lab_levels_passed(raw_connection(s))

    def lab_cards(self) -> list[LabCard]:
        """Every lab card, by exercise and level."""
        with self._read() as s:
            return [_lab_card(r) for r in s.scalars(
                select(LabCardRow).order_by(LabCardRow.exercise, LabCardRow.level))]

    def lab_card(self, exercise: str, level: int) -> LabCard | None:
        with self._read() as s:
            row = s.get(LabCardRow, (exercise, level))
            return None if row is None else _lab_card(row)

    def due_lab_cards(self, now: dt.datetime | None = None) -> list[LabCard]:
        """Lab cards due by today's study day, most overdue first: the levels to rebuild."""
        day = self.study_day(now)
        with self._read() as s:
            return [_lab_card(r) for r in s.scalars(
                select(LabCardRow).where(LabCardRow.due <= day)
                .order_by(LabCardRow.due, LabCardRow.exercise, LabCardRow.level))]

    # ------------------------------------------------------------------------- lab recalls
    def add_lab_recalls(self, items: Iterable[tuple[str, str, int, str]],
                        now: dt.datetime | None = None) -> list[str]:
        """Bring (question, exercise, level, case) back into today's queue, once per question
        per study day; returns the questions added now. A question without a card (not in the
        bank) is skipped. The card itself is not changed."""
        moment = now or utc_now()
        day = self.study_day(moment)
        added: list[str] = []
        with self._write() as s:
            for qid, exercise, level, case_id in items:
                if qid in added or s.get(CardRow, qid) is None:
                    continue
                if s.get(LabRecallRow, (qid, day)) is not None:
                    continue
                s.add(LabRecallRow(question_id=qid, study_day=day, exercise=exercise,
                                   level=int(level), case_id=case_id, created_ms=to_ms(moment)))
                added.append(qid)
        return added

    def missing_cards(self, question_ids: Iterable[str]) -> list[str]:
        """The ids among `question_ids` that have no card (a bank not synced yet)."""
        wanted = list(dict.fromkeys(question_ids))
        with self._read() as s:
            have = set(s.scalars(select(CardRow.question_id)
                                 .where(CardRow.question_id.in_(wanted))))
        return [q for q in wanted if q not in have]

    # ----------------------------------------------------------------------- lab workspace
    def lab_state(self, exercise: str) -> dict[str, Any] | None:
        """What the app remembers about an exercise's workspace (which folder, hints shown,
        the interview clock), or None when nothing is stored yet. Kept here, not in a file in
        the workspace: the learner's code may write its workspace, never this database."""
        with self._read() as s:
            raw = s.scalar(select(SettingRow.value).where(
                SettingRow.key == _LAB_STATE_KEY + exercise))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def set_lab_state(self, exercise: str, state: dict[str, Any]) -> None:
        """Replace an exercise's remembered workspace state (see `lab_state`)."""
        value = json_object(state, "lab state") or "{}"
        with self._write() as s:
            s.merge(SettingRow(key=_LAB_STATE_KEY + exercise, value=value))
