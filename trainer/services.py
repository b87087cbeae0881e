"""The app's headless core: a study session built from the scheduler and the question bank.

Everything the screens do to data goes through here, so the session rules (queue order, same-day
re-drill, undo, cram) are tested without a terminal. Heavy packages (SQLAlchemy via the scheduler)
are imported inside `Services.open`, which the app calls from a worker after the first paint.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from questions.bank import Bank
    from questions.model import Instance, Question
    from scheduler.records import Card, LabAttempt
    from scheduler.store import Store
    from scheduler.transition import Mode

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


def _ratio(raw: Any) -> float | None:
    """True retention as a 0..1 float, or None when there is no mature review yet."""
    rate = getattr(raw, "rate", None)
    return float(rate) if isinstance(rate, int | float) else None


# --- view models --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TodayView:
    """Everything the home screen shows, computed in one go off the UI thread."""

    day: dt.date
    due: int
    new: int
    redrill: int
    streak: int
    reviews_today: int
    retention: float | None
    per_day: dict[dt.date, int]
    forecast: list[int]
    first_run: bool
    total_questions: int
    topics: list[tuple[str, str]]  # (id, title)
    bank_errors: list[str]

    @property
    def to_do(self) -> int:
        return self.due + self.new + self.redrill


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
class Reask:
    """The input could not be read as an answer: ask again with the parser's message."""

    message: str


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

    @property
    def grades(self) -> tuple[int, ...]:
        return RIGHT_GRADES if self.correct else WRONG_GRADES

    @property
    def default_grade(self) -> int:
        """Enter's grade: 'good' when right (so a re-drill passes), 'recognised' when wrong."""
        return 4 if self.correct else 1


@dataclass
class Summary:
    answered: int = 0
    correct: int = 0
    seconds: float = 0.0
    missed_topics: dict[str, int] = field(default_factory=dict)
    next_due: dt.date | None = None
    redrilled: int = 0
    cram: bool = False
    left_today: int = 0  # cards still queued when the session ended (Enter at home resumes)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass
class _State:
    queue: list[Item]
    pending: list[str]  # ids awaiting re-drill (transition.needs_redrill), in order
    summary: Summary
    done: list[str]


# --- services -----------------------------------------------------------------------------------


class Services:
    """The scheduler store and the question bank, opened together.

    `now` pins the clock (tests, snapshots, "what does tomorrow look like"); None is real time.
    """

    def __init__(self, store: Store, bank: Bank, now: dt.datetime | None = None) -> None:
        self._store = store
        self.bank = bank
        self.now = now
        self.rng = random.Random()
        # Answers are written on one background thread, in order, so the next card paints
        # without waiting for SQLite's fsync; every read goes through `store`, which waits.
        self._writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dojo-store")
        self._last_write: Future[Any] | None = None

    @property
    def store(self) -> Store:
        """The store, once every queued write has landed (reads then see them)."""
        self.flush()
        return self._store

    def write(self, fn: Callable[[Store], Any]) -> Future[Any]:
        """Queue a write; writes run one at a time in submission order."""
        future = self._writes.submit(fn, self._store)
        self._last_write = future
        return future

    def flush(self) -> None:
        """Wait for queued writes. A failed write is reported by whoever queued it (the review
        screen shows it); it must not break every later read."""
        last = self._last_write
        if last is not None:
            wait([last])

    def close(self) -> None:
        """Finish queued writes and close the database."""
        self._writes.shutdown(wait=True)
        self._store.close()

    @classmethod
    def open(
        cls,
        db_path: Path | None = None,
        bank_paths: Sequence[Path] | None = None,
        now: dt.datetime | None = None,
    ) -> Services:
        """Open the store and load the bank; new questions get cards. Slow-ish: call off-thread."""
        from questions.bank import load_bank
        from scheduler.store import Store

        bank = load_bank(list(bank_paths)) if bank_paths else load_bank()
        store = Store.open(db_path)
        questions = [(q.id, q.topic) for q in bank.study_order()]  # new-card order
        # Retire the cards of questions that no longer load (a pack removed or broken), so
        # Today's counts are what a session serves; an empty bank is a broken install instead.
        store.sync_cards(questions, retire_missing=bool(questions))
        return cls(store, bank, now)

    # -- read side ---------------------------------------------------------------------------

    def day(self) -> dt.date:
        """Today's study day (the store's rollover hour and time zone apply)."""
        return self.store.study_day(self.now)

    def bank_errors(self) -> list[str]:
        return [str(e) for e in self.bank.errors]

    def topic_title(self, topic_id: str) -> str:
        topic = self.bank.topics.get(topic_id)
        return topic.title if topic else topic_id

    def question(self, question_id: str) -> Question:
        question = self.bank.get(question_id)
        if question is None:
            raise KeyError(f"{question_id} is not in the question bank")
        return question

    def today(self) -> TodayView:
        queue = self.store.today_queue(self.now)
        per_day = self.store.reviews_per_day(84, self.now)
        first_run = not any(per_day.values()) and all(c.is_new for c in self.store.cards())
        return TodayView(
            day=queue.day,
            due=len(queue.reviews),
            new=len(queue.new),
            redrill=len(queue.redrill),
            streak=self.store.streak(self.now),
            reviews_today=per_day.get(queue.day, 0),
            retention=self.store.true_retention(30, self.now).rate,
            per_day=per_day,
            forecast=list(self.store.forecast(14, self.now).values()),
            first_run=first_run,
            total_questions=len(self.bank.questions),
            topics=sorted((tid, t.title) for tid, t in self.bank.topics.items()),
            bank_errors=self.bank_errors(),
        )

    # -- sessions ----------------------------------------------------------------------------

    def draw(
        self, question_id: str, mode: Mode, seed: int | None = None, *, new: bool = False
    ) -> Item:
        question = self.question(question_id)
        seed = self.rng.randrange(2**31) if seed is None else seed
        return Item(question_id, mode, seed, question, question.draw(seed), new)

    def start_session(self) -> Session:
        """Today's scheduled cards: due reviews, new cards, then re-drills left from earlier."""
        queue = self.store.today_queue(self.now)
        known = {q.id for q in self.bank.questions}
        items = [
            self.draw(i.question_id, "review") for i in queue.reviews if i.question_id in known
        ]
        items += [self.draw(i.question_id, "review", new=True)
                  for i in queue.new if i.question_id in known]
        pending = [i.question_id for i in queue.redrill if i.question_id in known]
        return Session(self, items, pending, cram=False)

    def start_cram(self, topic: str | None = None, limit: int = 20) -> Session:
        """Practice without touching the schedule: a shuffled slice of a topic (or everything)."""
        ids = [q.id for q in self.bank.questions if topic is None or q.topic == topic]
        self.rng.shuffle(ids)
        return Session(self, [self.draw(i, "cram") for i in ids[:limit]], [], cram=True)


class Session:
    """One sitting: show an item, check an answer, record a grade, re-drill, undo."""

    def __init__(self, services: Services, items: list[Item], pending: list[str], *, cram: bool):
        self.services = services
        self.cram = cram
        self.total_scheduled = len(items)
        self._state = _State(list(items), list(pending), Summary(cram=cram), [])
        self._history: list[tuple[_State, Item, Future[Any]]] = []
        self._shown_at = time.monotonic()
        self._started = time.monotonic()
        self._feedback: Feedback | None = None
        self._given_text = ""
        self.last_write: Future[Any] | None = None
        self._refill()

    # -- queue ---------------------------------------------------------------------------

    @property
    def current(self) -> Item | None:
        return self._state.queue[0] if self._state.queue else None

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

    def _refill(self) -> None:
        """When the scheduled cards run out, every card still below 4 comes back (re-drill)."""
        if self._state.queue or not self._state.pending:
            return
        mode: Mode = "cram" if self.cram else "redrill"
        self._state.queue = [self.services.draw(i, mode) for i in self._state.pending]
        self._state.pending = []

    def mark_shown(self) -> None:
        """Start the response clock (the screen calls this when the card is painted)."""
        self._shown_at = time.monotonic()

    # -- answering -------------------------------------------------------------------------

    def submit(self, answer: str | int) -> Feedback | Reask:
        """Check an answer (an MCQ choice index, or typed text); unreadable input is re-asked."""
        item = self.current
        if item is None:
            raise RuntimeError("no card to answer")
        if self._feedback is not None:
            return self._feedback
        elapsed_ms = int((time.monotonic() - self._shown_at) * 1000)
        inst = item.instance
        explanation = inst.explanation
        if item.is_mcq:
            index = _choice_index(answer, len(inst.choices))
            if index is None:
                return Reask(
                    f"Pick one of A–{chr(64 + len(inst.choices))} (or 1–{len(inst.choices)})."
                )
            right = int(inst.correct_index or 0)
            self._given_text = f"{chr(65 + index)}. {inst.choices[index]}"
            self._feedback = Feedback(
                correct=index == right,
                expected=f"{chr(65 + right)}. {inst.choices[right]}",
                given=self._given_text,
                hint="",
                explanation=explanation,
                response_ms=elapsed_ms,
                chosen_index=index,
            )
            return self._feedback
        from questions.answers import check_answer

        text = str(answer)
        outcome = check_answer(inst, text)
        if outcome.reask:
            return Reask(outcome.message or "That is not a number I can read.")
        self._given_text = text
        self._feedback = Feedback(
            correct=outcome.correct,
            expected=outcome.expected_display,
            given=text.strip(),
            hint=outcome.hint or "",
            explanation=explanation,
            response_ms=elapsed_ms,
        )
        return self._feedback

    def grade(self, quality: int) -> None:
        """Record the answer with an SM-2 grade and move on (re-drilling anything below 4)."""
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
        mode = item.mode
        answer_text, now = self._given_text, self.services.now
        params = {"seed": item.seed, "values": _jsonable(item.instance.values)}
        self.last_write = self.services.write(
            lambda store: store.answer(
                item.question_id,
                quality,
                correct=fb.correct,
                answer_text=answer_text,
                response_ms=fb.response_ms,
                params=params,
                now=now,
                mode=mode,
            )
        )
        self._history.append((before, item, self.last_write))
        s = self._state.summary
        s.answered += 1
        s.correct += int(fb.correct)
        s.redrilled += int(item.mode == "redrill")
        if not fb.correct:
            topic = self.services.topic_title(item.question.topic)
            s.missed_topics[topic] = s.missed_topics.get(topic, 0) + 1
        self._state.queue.pop(0)
        self._state.done.append(item.question_id)
        from scheduler.transition import needs_redrill

        if needs_redrill(quality) and item.question_id not in self._state.pending:
            self._state.pending.append(item.question_id)
        self._feedback = None
        self._refill()
        self.mark_shown()

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
        self.mark_shown()
        return item

    def drop_current(self, how: Literal["bury", "suspend"]) -> Item | None:
        """Bury (until tomorrow) or suspend the current card and skip it."""
        item = self.current
        if item is None:
            return None
        if how == "bury":
            self.services.store.bury(item.question_id, self.services.now)
        else:
            self.services.store.suspend(item.question_id)
        self._state.queue.pop(0)
        if item.question_id in self._state.pending:
            self._state.pending.remove(item.question_id)
        self._feedback = None
        self._refill()
        self.mark_shown()
        return item

    def flag(self, note: str) -> None:
        item = self.current
        if item is not None:
            self.services.store.flag(item.question_id, note, self.services.now)

    def summary(self) -> Summary:
        s = replace(self._state.summary, missed_topics=dict(self._state.summary.missed_topics))
        s.seconds = time.monotonic() - self._started
        s.left_today = len(self._state.queue) + len(self._state.pending)
        if not self.cram:
            forecast = self.services.store.forecast(365, self.services.now)
            today = self.services.day()
            s.next_due = min((d for d, n in forecast.items() if n and d > today), default=None)
        return s


def _choice_index(answer: str | int, n: int) -> int | None:
    if isinstance(answer, int):
        return answer if 0 <= answer < n else None
    text = answer.strip().lower()
    if len(text) == 1 and "a" <= text <= chr(96 + n):
        return ord(text) - 97
    if text.isdigit() and 1 <= int(text) <= n:
        return int(text) - 1
    return None


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        out[str(key)] = value if isinstance(value, int | float | str | bool) else str(value)
    return out


# --- browse and stats ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BrowseRow:
    question_id: str
    topic: str
    kind: str
    status: str  # new | due | scheduled | suspended | leech | buried | retired
    due: dt.date | None
    ef: float | None
    interval: int | None
    lapses: int
    text: str  # the prompt as written (placeholders unfilled), for search


@dataclass(frozen=True)
class HistoryRow:
    when: dt.datetime | None
    mode: str
    quality: int
    correct: bool
    answer: str
    interval: int | None
    response_ms: int


@dataclass(frozen=True)
class StatsView:
    day: dt.date
    per_day: dict[dt.date, int]
    retention: list[tuple[str, float | None, int]]  # (window, rate, mature answers counted)
    retention_weeks: list[float | None]  # true retention per week, oldest first (12 weeks)
    topics: list[tuple[str, int, int]]  # (title, answered, correct)
    ef: list[tuple[str, int]]
    intervals: list[tuple[str, int]]
    forecast: list[int]
    streak: int
    lab: list[tuple[str, int, bool, int, str]]  # (exercise, level, passed ever, attempts, best)


def _card_status(card: Card, today: dt.date) -> str:
    if card.retired:
        return "retired"
    if card.suspended:
        return "suspended"
    if card.buried_until is not None and card.buried_until >= today:
        return "buried"
    if card.leech:
        return "leech"
    if card.due is None:
        return "new"
    return "due" if card.due <= today else "scheduled"


def browse_rows(services: Services) -> list[BrowseRow]:
    """Every question in the bank with its card's scheduling state."""
    today = services.day()
    cards = {c.question_id: c for c in services.store.cards()}
    rows = []
    for q in services.bank.questions:
        card = cards.get(q.id)
        reviewed = card is not None and not card.is_new
        rows.append(
            BrowseRow(
                question_id=q.id,
                topic=q.topic,
                kind=q.kind,
                status=_card_status(card, today) if card is not None else "new",
                due=card.due if card is not None else None,
                ef=float(card.ef) if card is not None and reviewed else None,
                interval=card.interval if card is not None and reviewed else None,
                lapses=card.lapses if card is not None else 0,
                text=" ".join(q.prompt.split()),
            )
        )
    return rows


def card_history(services: Services, question_id: str) -> list[HistoryRow]:
    """Each logged answer to a card: when, mode, grade, what was typed, the interval after."""
    return [
        HistoryRow(
            when=r.reviewed_at,
            mode=r.mode,
            quality=r.quality,
            correct=r.correct,
            answer=r.answer_text,
            interval=r.after.interval if r.mode == "review" else None,
            response_ms=r.response_ms,
        )
        for r in services.store.history(question_id)
    ]


def stats_view(services: Services) -> StatsView:
    store, now = services.store, services.now
    retention = []
    for days in (7, 30, 90, 365):
        raw = store.true_retention(days, now)
        retention.append((f"{days} d", raw.rate, raw.total))
    topics = [
        (services.topic_title(t.topic), t.answered, t.correct)
        for t in store.topic_accuracy().values()
    ]
    lab: dict[tuple[str, int], list[LabAttempt]] = {}
    for attempt in store.lab_attempts():
        lab.setdefault((attempt.exercise, attempt.level), []).append(attempt)
    lab_rows = []
    for (exercise, level), attempts in sorted(lab.items()):
        passed = any(a.passed for a in attempts)
        best = min((a.duration_s for a in attempts if a.passed), default=None)
        lab_rows.append(
            (exercise, level, passed, len(attempts), "" if best is None else f"{best:.1f} s")
        )
    return StatsView(
        day=services.day(),
        per_day=store.reviews_per_day(365, now),
        retention=retention,
        retention_weeks=[r.rate for _, r in store.retention_by_week(12, now)],
        topics=topics,
        ef=[(f"{ef:.2f}", n) for ef, n in store.ef_distribution().items()],
        intervals=list(store.interval_distribution().items()),
        forecast=list(store.forecast(30, now).values()),
        streak=store.streak(now),
        lab=lab_rows,
    )
