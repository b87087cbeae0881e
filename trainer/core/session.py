"""One study sitting: show a card, check the answer, take a grade, re-drill, undo.

Answers are checked by `questions.answers.check_answer` (the one checker) and scheduled by the
Store through `scheduler.next_states` (the one set of study rules, under the active scheduler),
which also gives the feedback's grade previews; the session only keeps the order of the
sitting. A learner who mistyped can count a wrong verdict right before grading
(`override`): the answer is logged as overridden, so stats can tell it from a real pass. A case
study is answered step by step through `case` (`trainer.core.case`); once its last step is done
(`next_step`) it is graded and recorded once, like any other card.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from trainer.core.case import CaseProgress

if TYPE_CHECKING:
    from questions.model import Instance, Question
    from scheduler.records import Mode, ReviewResult
    from trainer.core.services import Services

# SM-2 grade labels, Anki-like: a wrong answer offers 0/1/2, a right one 3/4/5.
GRADE_LABELS: dict[int, str] = {
    0: "blackout",
    1: "recognised",
    2: "almost",
    3: "hard",
    4: "good",
    5: "easy",
}
WRONG_GRADES = (0, 1, 2)
RIGHT_GRADES = (3, 4, 5)
ALL_GRADES = (*WRONG_GRADES, *RIGHT_GRADES)  # a case study: suggested from its steps, any grade


@dataclass
class Item:
    """One card as shown in a session: the question and this showing's drawn instance."""

    question_id: str
    mode: Mode
    seed: int
    question: Question
    instance: Instance
    new: bool = False  # a scheduled review of a card never seen before

    @property
    def is_mcq(self) -> bool:
        return str(self.question.kind) == "mcq"


@dataclass(frozen=True)
class GradePreview:
    """What one grade key will save (`scheduler.next_states`, the rule the store applies)."""

    days: int | None  # days until the card is next due; None: the schedule stays as it is
    again: bool  # the card comes back today (re-drill)
    ease_change: float | None = None  # SM-2: the EF change, e.g. -0.14; None under FSRS


@dataclass(frozen=True)
class Previews:
    """The grade bar's promise for the card showing: every grade's outcome under the active
    scheduler, and (FSRS) the card's predicted recall now."""

    scheduler: str  # "sm2" or "fsrs"
    grades: dict[int, GradePreview]
    recall: float | None = None  # FSRS: recall now; None for a new card or under SM-2


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer, before the learner grades it."""

    correct: bool
    expected: str
    given: str
    hint: str
    explanation: str
    response_ms: int
    chosen_index: int | None = None
    mistake_id: str | None = None  # the named mistake (or MCQ distractor) the answer matches
    diagnosis: str = ""  # what that mistake is, shown first
    accepted: str = ""  # the accepted range, e.g. "accepted 5.10–5.20 s"
    overridden: bool = False  # the learner mistyped and counted a wrong verdict right
    suggested: int | None = None  # a case study: the grade its steps suggest (any may be chosen)
    lab: str = ""  # a miss whose lab level is not passed yet: "Practise this in the lab: ..."
    previews: Previews | None = None  # what each grade key will save

    @property
    def grades(self) -> tuple[int, ...]:
        if self.suggested is not None:
            return ALL_GRADES
        return RIGHT_GRADES if self.correct else WRONG_GRADES

    @property
    def default_grade(self) -> int:
        """Enter's grade: the re-drill bar when right ('good', so a re-drill passes),
        'recognised' when wrong; a case study's suggested grade."""
        from scheduler.transition import REDRILL_UNTIL

        if self.suggested is not None:
            return self.suggested
        return REDRILL_UNTIL if self.correct else 1


@dataclass
class SessionSummary:
    answered: int = 0
    correct: int = 0
    overridden: int = 0  # of `correct`, verdicts the learner counted right after a typo
    seconds: float = 0.0
    missed_topics: dict[str, int] = field(default_factory=dict)
    next_due: dt.date | None = None
    redrilled: int = 0
    cram: bool = False
    left_today: int = 0  # cards still queued when the session ended (Enter at home resumes)
    labs: list[str] = field(default_factory=list)  # lab levels suggested by misses, in order

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass
class _State:
    queue: list[Item]
    pending: list[str]  # ids awaiting re-drill (transition.needs_redrill), in order
    summary: SessionSummary
    done: list[str]


class Session:
    """One sitting: show an item, check an answer, record a grade, re-drill, undo."""

    def __init__(self, services: Services, items: list[Item], pending: list[str], *, cram: bool,
                 answered_seeds: Mapping[str, int] | None = None):
        self.services = services
        self.cram = cram
        self.total_scheduled = len(items)
        self._state = _State(list(items), list(pending), SessionSummary(cram=cram), [])
        self._history: list[tuple[_State, Item, Future[ReviewResult]]] = []
        # What each queued answer added to the summary, to take back if it is not saved.
        self._counted: dict[Future[ReviewResult], tuple[Item, bool, bool, str | None, bool]] = {}
        self._shown_at = time.monotonic()
        self._started = time.monotonic()
        self._feedback: Feedback | None = None
        self._given_text = ""
        self._case: CaseProgress | None = None
        self._passed_labs: set[tuple[str, int]] | None = None  # read once, at the first miss
        self._labs: list[str] = []
        # The draw each card was last answered with (re-drills avoid its numbers).
        self._answered_seed: dict[str, int] = dict(answered_seeds or {})
        self._refill()

    # -- queue ---------------------------------------------------------------------------

    @property
    def current(self) -> Item | None:
        return self._state.queue[0] if self._state.queue else None

    @property
    def upcoming(self) -> Item | None:
        """The card queued after the current one (None when the current card is the last
        queued: re-drills then come back with fresh draws, not known before)."""
        queue = self._state.queue
        return queue[1] if len(queue) > 1 else None

    @property
    def feedback(self) -> Feedback | None:
        return self._feedback

    @property
    def remaining(self) -> int:
        return len(self._state.queue)

    @property
    def pending_redrill(self) -> list[str]:
        return list(self._state.pending)

    @property
    def answered(self) -> int:
        return self._state.summary.answered

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    @property
    def can_override(self) -> bool:
        """A wrong verdict is showing and has not been graded: the learner may count it right
        (for a case study, the wrong verdict of the step showing: `case.override()`)."""
        if self._feedback is None:
            case = self.case
            return case is not None and case.can_override
        return not self._feedback.correct and self._feedback.suggested is None

    @property
    def case(self) -> CaseProgress | None:
        """The current card's progress when it is a case study (started on first use)."""
        item = self.current
        if item is None or not item.instance.is_case:
            return None
        if self._case is None or self._case.instance is not item.instance:
            self._case = CaseProgress(item.instance)
        return self._case

    def next_step(self) -> Feedback | None:
        """Move past the case step showing its verdict; after the last step, the card's
        feedback (explanation, suggested grade), to be graded like any other."""
        case = self.case
        if case is None:
            raise RuntimeError("the current card is not a case study")
        if self._feedback is not None:
            return self._feedback
        if not case.next():
            return None
        self._given_text = " | ".join(v.given for v in case.verdicts)
        right = case.rights
        self._feedback = Feedback(
            correct=all(right),
            expected=" | ".join(v.revealed for v in case.verdicts),
            given=self._given_text,
            hint="",
            explanation=case.instance.explanation,
            response_ms=int((time.monotonic() - self._shown_at) * 1000),
            mistake_id=case.mistake_id,
            overridden=any(v.overridden for v in case.verdicts),
            suggested=case.suggested_grade(),
            previews=self._previews(self.current),
        )
        return self._feedback

    def _refill(self) -> None:
        """When the scheduled cards run out, every card still awaiting re-drill comes back."""
        if self._state.queue or not self._state.pending:
            return
        mode: Mode = "cram" if self.cram else "redrill"
        # Fresh numbers: a re-drill that repeats the values just answered tests recall of
        # the answer, not of the method.
        self._state.queue = [self.services.draw_fresh(i, mode, self._answered_seed.get(i))
                             for i in self._state.pending]
        self._state.pending = []

    def skip_answered_elsewhere(self) -> list[Item]:
        """Before a card is shown: drop from the front of the queue each scheduled review that
        another window answered meanwhile (`Services.answered_elsewhere`), and return them so
        the screen says so then, not after the learner has answered in vain."""
        skipped: list[Item] = []
        while (item := self.current) is not None and item.mode == "review" and \
                self._feedback is None and self.services.answered_elsewhere(item.question_id):
            self._state.queue.pop(0)
            if item.question_id in self._state.pending:
                self._state.pending.remove(item.question_id)
            skipped.append(item)
            self._case = None
            self._refill()
        return skipped

    def mark_shown(self) -> None:
        """Start the response clock (the screen calls this when the card is painted)."""
        self._shown_at = time.monotonic()

    # -- answering -------------------------------------------------------------------------

    def submit(self, answer: str | int) -> Feedback:
        """Check an answer: typed text, or an MCQ choice by its shown index.

        Raises `questions.answers.Reask` (with the checker's message) for input that cannot be
        graded; nothing is recorded then."""
        from questions.answers import Reask, check_answer, check_choice

        item = self.current
        if item is None:
            raise RuntimeError("no card to answer")
        if self._feedback is not None:
            return self._feedback
        if item.instance.is_case:
            raise RuntimeError("a case study is answered step by step: use `case`")
        elapsed_ms = int((time.monotonic() - self._shown_at) * 1000)
        text = str(answer)
        if isinstance(answer, int) and not item.is_mcq:
            raise Reask("this card has no choices: type the answer")
        if isinstance(answer, int):  # a picked choice, graded by its index
            outcome = check_choice(item.instance, answer)
        else:
            outcome = check_answer(item.instance, text)
        if outcome.reask:
            raise Reask(outcome.message or "That is not an answer I can read.")
        self._given_text = outcome.given_display if item.is_mcq else text.strip()
        self._feedback = Feedback(
            correct=outcome.correct,
            expected=outcome.expected_display,
            given=self._given_text,
            hint=outcome.hint or "",
            explanation=item.instance.explanation,
            response_ms=elapsed_ms,
            chosen_index=outcome.chosen_index,
            mistake_id=outcome.mistake_id,  # the named mistake the answer matches
            diagnosis=outcome.diagnosis or "",
            accepted=outcome.accepted,
            lab="" if outcome.correct else self._lab_suggestion(item),
            previews=self._previews(item),
        )
        return self._feedback

    def _lab_suggestion(self, item: Item) -> str:
        """For a miss: the question's lab level, when the learner has not passed it yet."""
        link = item.question.lab
        if link is None:  # a concept no lab level exercises
            return ""
        if self._passed_labs is None:
            try:
                self._passed_labs = self.services.store.lab_levels_passed()
            except Exception:  # a suggestion is a courtesy: never stop the answer for it
                return ""
        if (link.exercise, link.level) in self._passed_labs:
            return ""
        text = (f"Practise this in the lab: dojo lab start {link.exercise} "
                f"--level {link.level}")
        if text not in self._labs:
            self._labs.append(text)
        return text

    def _previews(self, item: Item | None) -> Previews | None:
        """Every grade's outcome for the card, from `Store.preview`: the same
        `scheduler.next_states` call the answer's write makes, so the bar shows what is saved.
        A grade that cannot reschedule the card today (answered in another window) shows no
        interval."""
        from scheduler.transition import needs_redrill

        if item is None:
            return None
        store = self.services.store
        try:
            outlook = store.preview(item.question_id, item.mode, self.services.now)
        except LookupError:
            return Previews("sm2", {g: GradePreview(None, needs_redrill(g)) for g in ALL_GRADES})
        before = outlook.card.state.ef_hundredths
        grades: dict[int, GradePreview] = {}
        for g in ALL_GRADES:
            nxt = outlook.states.get(g)
            if nxt is None:
                grades[g] = GradePreview(None, needs_redrill(g))
                continue
            ease = None
            if outlook.scheduler == "sm2" and nxt.days is not None:
                ease = (nxt.scheduled.state.ef_hundredths - before) / 100
            grades[g] = GradePreview(nxt.days, nxt.redrill, ease)
        return Previews(outlook.scheduler, grades,
                        outlook.recall if outlook.scheduler == "fsrs" else None)

    def override(self) -> Feedback:
        """'I mistyped — count it right': turn the wrong verdict showing into a right one, to be
        graded 3-5 and logged as overridden (its named mistake is not recorded)."""
        fb = self._feedback
        if fb is None or fb.correct:
            raise RuntimeError("only a wrong verdict that is not graded yet can be overridden")
        self._feedback = replace(fb, correct=True, overridden=True, mistake_id=None)
        return self._feedback

    def grade(self, quality: int) -> Future[ReviewResult]:
        """Record the answer with an SM-2 grade and move on (re-drilling what needs it).

        Returns the queued write: it fails (its `exception()`) when the answer could not be
        saved, which the caller reports; the session moves on either way."""
        from scheduler.transition import needs_redrill

        item, fb = self.current, self._feedback
        if item is None or fb is None:
            raise RuntimeError("answer the card before grading it")
        if quality not in fb.grades:
            raise ValueError(
                f"grade {quality} does not fit a {'right' if fb.correct else 'wrong'} answer"
            )
        before = _State(
            list(self._state.queue),
            list(self._state.pending),
            replace(self._state.summary, missed_topics=dict(self._state.summary.missed_topics)),
            list(self._state.done),
        )
        mode, answer_text, now = item.mode, self._given_text, self.services.now
        params = {"seed": item.seed, "values": _jsonable(item.instance.values)}
        self._answered_seed[item.question_id] = item.seed
        write: Future[ReviewResult] = self.services.write(
            lambda store: store.answer(
                item.question_id,
                quality,
                correct=fb.correct,
                answer_text=answer_text,
                response_ms=fb.response_ms,
                params=params,
                now=now,
                mode=mode,
                mistake_id=fb.mistake_id,
                overridden=fb.overridden,
            )
        )
        self._history.append((before, item, write))
        missed = None if fb.correct else self.services.topic_title(item.question.topic)
        self._counted[write] = (item, fb.correct, fb.overridden, missed,
                                needs_redrill(quality) and item.question_id not in
                                self._state.pending)
        s = self._state.summary
        s.answered += 1
        s.correct += int(fb.correct)
        s.overridden += int(fb.overridden)
        s.redrilled += int(item.mode == "redrill")
        if not fb.correct:
            topic = self.services.topic_title(item.question.topic)
            s.missed_topics[topic] = s.missed_topics.get(topic, 0) + 1
        self._state.queue.pop(0)
        self._state.done.append(item.question_id)
        if needs_redrill(quality) and item.question_id not in self._state.pending:
            self._state.pending.append(item.question_id)
        self._feedback = None
        self._case = None
        self._refill()
        self.mark_shown()
        return write

    def unsaved(self, write: Future[ReviewResult], *, retry: bool) -> None:
        """An answer's write failed (disk full, answered in another window): take it out of
        the summary and the undo history, so the session matches the database; with `retry`
        the card comes back at the end of the queue to be answered again (it is still due).
        Call on the UI thread, once the write has failed."""
        counted = self._counted.pop(write, None)
        if counted is None:
            return
        item, correct, overridden, missed, queued_redrill = counted
        self._history = [h for h in self._history if h[2] is not write]
        s = self._state.summary
        s.answered -= 1
        s.correct -= int(correct)
        s.overridden -= int(overridden)
        s.redrilled -= int(item.mode == "redrill")
        if missed is not None and s.missed_topics.get(missed):
            s.missed_topics[missed] -= 1
            if not s.missed_topics[missed]:
                del s.missed_topics[missed]
        if queued_redrill and item.question_id in self._state.pending:
            self._state.pending.remove(item.question_id)
        if retry and all(i.question_id != item.question_id for i in self._state.queue):
            self._state.queue.append(self.services.draw(item.question_id, item.mode,
                                                        new=item.new))

    def undo(self) -> Item | None:
        """Take back the last graded answer: the store restores the card, the card comes back.

        The answer is undone by its review id, so it works across the rollover hour; None when
        there is nothing to undo or the card was answered again elsewhere since."""
        if not self._history:
            return None
        before, item, written = self._history[-1]
        store = self.services.store  # waits for queued writes
        # (a failed write left nothing to take back)
        if written.exception() is None and store.undo(
            review_id=written.result().review_id
        ) is None:
            return None
        self._history.pop()
        self._state = before
        if not self._state.queue or self._state.queue[0] is not item:
            self._state.queue.insert(0, item)
        self._feedback = None
        self._case = None  # an undone case is answered again from its first step
        self.mark_shown()
        return item

    def drop_current(self, how: Literal["bury", "suspend"]) -> Item | None:
        """Bury (until tomorrow) or suspend the current card and skip it."""
        item = self.current
        if item is None:
            return None
        if how == "bury":
            self.services.bury(item.question_id)
        else:
            self.services.suspend(item.question_id)
        self._state.queue.pop(0)
        if item.question_id in self._state.pending:
            self._state.pending.remove(item.question_id)
        self._feedback = None
        self._case = None
        self._refill()
        self.mark_shown()
        return item

    def flag(self, note: str) -> None:
        item = self.current
        if item is not None:
            self.services.store.flag(item.question_id, note, self.services.now)

    def summary(self) -> SessionSummary:
        s = replace(self._state.summary, missed_topics=dict(self._state.summary.missed_topics))
        s.seconds = time.monotonic() - self._started
        s.left_today = len(self._state.queue) + len(self._state.pending)
        s.labs = list(self._labs)
        if not self.cram:
            forecast = self.services.store.forecast(365, self.services.now)
            today = self.services.day()
            s.next_due = min((d for d, n in forecast.items() if n and d > today), default=None)
        return s


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        out[str(key)] = value if isinstance(value, int | float | str | bool) else str(value)
    return out
