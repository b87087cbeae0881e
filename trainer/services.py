"""The app's headless core: a study session built from the scheduler and the question bank.

Everything the screens do to data goes through here, so the session rules (queue order, same-day
re-drill, undo, cram) are tested without a terminal. Heavy packages (SQLAlchemy via the scheduler)
are imported inside `Services.open`, which the app calls from a worker after the first paint.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

Mode = Literal["review", "new", "redrill", "cram"]

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
REDRILL_PASS = 4  # same-day re-drill continues until a card is graded at least this


# --- small adapters: the only places that know the shape of the other packages' objects ------


def _qid(item: Any) -> str:
    """A queue entry may be a question id or a card-like object."""
    if isinstance(item, str):
        return item
    for name in ("question_id", "id"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"cannot read a question id from {item!r}")


def _ids(items: Iterable[Any] | None) -> list[str]:
    return [_qid(i) for i in items or ()]


def _per_day(raw: Any) -> dict[dt.date, int]:
    """`reviews_per_day` as {date: count}, whatever mapping/sequence shape it comes in."""
    out: dict[dt.date, int] = {}
    if raw is None:
        return out
    pairs: Iterable[Any] = raw.items() if isinstance(raw, dict) else raw
    for pair in pairs:
        if isinstance(pair, tuple):
            day, count = pair[0], pair[1]
        else:
            day = getattr(pair, "day", None) or getattr(pair, "date", None)
            count = getattr(pair, "count", None)
            if count is None:
                count = getattr(pair, "reviews", 0)
        if isinstance(day, str):
            day = dt.date.fromisoformat(day)
        if isinstance(day, dt.datetime):
            day = day.date()
        if isinstance(day, dt.date):
            out[day] = out.get(day, 0) + int(count)
    return out


def _counts(raw: Any) -> list[int]:
    """A forecast as a list of counts (day 0 = today)."""
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [int(v) for _, v in sorted(raw.items())]
    out = []
    for item in raw:
        if isinstance(item, tuple):
            out.append(int(item[1]))
        elif isinstance(item, int | float):
            out.append(int(item))
        else:
            out.append(int(getattr(item, "count", getattr(item, "due", 0))))
    return out


def _ratio(raw: Any) -> float | None:
    """True retention as a 0..1 float, or None when there is no mature review yet."""
    if raw is None:
        return None
    if isinstance(raw, int | float):
        return float(raw)
    for name in ("rate", "retention", "value", "ratio"):
        value = getattr(raw, name, None)
        if isinstance(value, int | float):
            return float(value)
    return None


# --- view models --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TodayView:
    """Everything the home screen shows, computed in one go off the UI thread."""

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
    question: Any
    instance: Any

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

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass
class _State:
    queue: list[Item]
    pending: list[str]  # ids graded below REDRILL_PASS, in order, awaiting re-drill
    summary: Summary
    done: list[str]


# --- services -----------------------------------------------------------------------------------


class Services:
    """The scheduler store and the question bank, opened together."""

    def __init__(self, store: Any, bank: Any) -> None:
        self.store = store
        self.bank = bank
        self.rng = random.Random()

    @classmethod
    def open(
        cls, db_path: Path | None = None, bank_paths: Sequence[Path] | None = None
    ) -> Services:
        """Open the store and load the bank; new questions get cards. Slow-ish: call off-thread."""
        from questions.bank import load_bank
        from scheduler.store import Store

        bank = load_bank(list(bank_paths)) if bank_paths else load_bank()
        store = Store.open(db_path)
        store.sync_cards([(q.id, q.topic) for q in bank.questions])
        return cls(store, bank)

    # -- read side ---------------------------------------------------------------------------

    def bank_errors(self) -> list[str]:
        return [str(e) for e in getattr(self.bank, "errors", ()) or ()]

    def topic_title(self, topic_id: str) -> str:
        topic = self.bank.topics.get(topic_id)
        return str(getattr(topic, "title", topic_id)) if topic else topic_id

    def today(self, now: dt.datetime | None = None) -> TodayView:
        queue = self.store.today_queue(now)
        per_day = _per_day(self.store.reviews_per_day(84))
        today_count = per_day.get(self._today(now), 0)
        first_run = not any(per_day.values()) and all(
            getattr(c, "due", None) is None for c in self.store.cards()
        )
        return TodayView(
            due=len(_ids(getattr(queue, "reviews", ()))),
            new=len(_ids(getattr(queue, "new", ()))),
            redrill=len(_ids(getattr(queue, "redrill", ()))),
            streak=int(self.store.streak() or 0),
            reviews_today=today_count,
            retention=_ratio(self.store.true_retention(30)),
            per_day=per_day,
            forecast=_counts(self.store.forecast(14)),
            first_run=first_run,
            total_questions=len(self.bank.questions),
            topics=sorted((tid, str(t.title)) for tid, t in self.bank.topics.items()),
            bank_errors=self.bank_errors(),
        )

    def _today(self, now: dt.datetime | None) -> dt.date:
        day = getattr(self.store, "study_day", None)
        if callable(day):
            value = day(now)
            if isinstance(value, dt.date):
                return value
        return (now or dt.datetime.now()).date()

    # -- sessions ----------------------------------------------------------------------------

    def draw(self, question_id: str, mode: Mode, seed: int | None = None) -> Item:
        question = self.bank.get(question_id)
        seed = self.rng.randrange(2**31) if seed is None else seed
        return Item(question_id, mode, seed, question, question.draw(seed))

    def start_session(self, now: dt.datetime | None = None) -> Session:
        """Today's scheduled cards: due reviews, new cards, then re-drills left from earlier."""
        queue = self.store.today_queue(now)
        known = {q.id for q in self.bank.questions}
        items: list[Item] = []
        for mode, entries in (("review", queue.reviews), ("new", queue.new)):
            items += [self.draw(i, mode) for i in _ids(entries) if i in known]  # type: ignore[arg-type]
        pending = [i for i in _ids(getattr(queue, "redrill", ())) if i in known]
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
        self._history: list[tuple[_State, Item]] = []
        self._shown_at = time.monotonic()
        self._started = time.monotonic()
        self._feedback: Feedback | None = None
        self._given_text = ""
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
        explanation = str(getattr(inst, "explanation", ""))
        if item.is_mcq:
            index = _choice_index(answer, len(inst.choices))
            if index is None:
                return Reask(
                    f"Pick one of A–{chr(64 + len(inst.choices))} (or 1–{len(inst.choices)})."
                )
            right = int(inst.correct_index)
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
        if getattr(outcome, "reask", False):
            return Reask(str(getattr(outcome, "message", "") or "That is not a number I can read."))
        self._given_text = text
        self._feedback = Feedback(
            correct=bool(outcome.correct),
            expected=str(outcome.expected_display),
            given=str(getattr(outcome, "given_display", text) or text),
            hint=str(getattr(outcome, "hint", "") or ""),
            explanation=explanation,
            response_ms=elapsed_ms,
        )
        return self._feedback

    def grade(self, quality: int, now: dt.datetime | None = None) -> None:
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
        mode = "cram" if self.cram else ("redrill" if item.mode == "redrill" else "review")
        self.services.store.answer(
            item.question_id,
            quality,
            correct=fb.correct,
            answer_text=self._given_text,
            response_ms=fb.response_ms,
            params={"seed": item.seed, "values": _jsonable(getattr(item.instance, "values", {}))},
            now=now,
            mode=mode,
        )
        self._history.append((before, item))
        s = self._state.summary
        s.answered += 1
        s.correct += int(fb.correct)
        s.redrilled += int(item.mode == "redrill")
        if not fb.correct:
            topic = str(item.question.topic)
            s.missed_topics[topic] = s.missed_topics.get(topic, 0) + 1
        self._state.queue.pop(0)
        self._state.done.append(item.question_id)
        if quality < REDRILL_PASS and item.question_id not in self._state.pending:
            self._state.pending.append(item.question_id)
        self._feedback = None
        self._refill()
        self.mark_shown()

    def undo(self) -> Item | None:
        """Take back the last graded answer: the store restores the card, the card comes back."""
        if not self._history:
            return None
        self.services.store.undo()
        before, item = self._history.pop()
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
        getattr(self.services.store, how)(item.question_id)
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
            self.services.store.flag(item.question_id, note)

    def summary(self) -> Summary:
        s = replace(self._state.summary, missed_topics=dict(self._state.summary.missed_topics))
        s.seconds = time.monotonic() - self._started
        if not self.cram:
            s.next_due = _next_due(self.services.store.forecast(30))
        return s


def _next_due(raw: Any) -> dt.date | None:
    """First day after today with something due, from the store's forecast."""
    counts = _counts(raw)
    for offset, count in enumerate(counts):
        if offset > 0 and count > 0:
            return dt.date.today() + dt.timedelta(days=offset)
    return None


def _choice_index(answer: str | int, n: int) -> int | None:
    if isinstance(answer, int):
        return answer if 0 <= answer < n else None
    text = answer.strip().lower()
    if len(text) == 1 and "a" <= text <= chr(96 + n):
        return ord(text) - 97
    if text.isdigit() and 1 <= int(text) <= n:
        return int(text) - 1
    return None


def _jsonable(values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in dict(values or {}).items():
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
    per_day: dict[dt.date, int]
    retention: list[tuple[str, float | None, int]]  # (window, rate, mature answers counted)
    topics: list[tuple[str, int, int]]  # (title, answered, correct)
    ef: list[tuple[str, int]]
    intervals: list[tuple[str, int]]
    forecast: list[int]
    streak: int
    lab: list[tuple[str, int, bool, int, str]]  # (exercise, level, passed ever, attempts, best)


def _pairs(raw: Any) -> list[tuple[str, int]]:
    """A distribution as (label, count) pairs, from a mapping or a sequence of pairs/records."""
    if raw is None:
        return []
    items: Iterable[Any] = raw.items() if isinstance(raw, dict) else raw
    out: list[tuple[str, int]] = []
    for item in items:
        if isinstance(item, tuple):
            label, count = item[0], item[1]
        else:
            label = getattr(item, "label", None) or getattr(item, "bucket", None) or str(item)
            count = getattr(item, "count", 0)
        out.append((_label(label), int(count)))
    return out


def _label(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2:
        return f"{_label(value[0])}–{_label(value[1])}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _card_status(card: Any, today: dt.date) -> str:
    if getattr(card, "retired", False):
        return "retired"
    if getattr(card, "suspended", False):
        return "suspended"
    buried = getattr(card, "buried_until", None)
    if buried is not None and buried >= today:
        return "buried"
    if getattr(card, "leech", False):
        return "leech"
    due = getattr(card, "due", None)
    if due is None:
        return "new"
    return "due" if due <= today else "scheduled"


def browse_rows(services: Services, now: dt.datetime | None = None) -> list[BrowseRow]:
    """Every question in the bank with its card's scheduling state."""
    today = services._today(now)
    cards = {c.question_id: c for c in services.store.cards()}
    rows = []
    for q in services.bank.questions:
        card = cards.get(q.id)
        state = getattr(card, "state", None)
        ef = getattr(card, "ef", None)
        rows.append(
            BrowseRow(
                question_id=q.id,
                topic=str(q.topic),
                kind=str(q.kind),
                status=_card_status(card, today) if card is not None else "new",
                due=getattr(card, "due", None),
                ef=float(ef) if ef is not None else None,
                interval=getattr(card, "interval", getattr(state, "interval", None)),
                lapses=int(getattr(card, "lapses", 0) or 0),
                text=" ".join(str(q.prompt).split()),
            )
        )
    return rows


def card_history(services: Services, question_id: str) -> list[HistoryRow]:
    """Each logged answer to a card: when, mode, grade, what was typed, the interval after."""
    rows = []
    for r in services.store.history(question_id):
        after = getattr(r, "after", None)
        rows.append(
            HistoryRow(
                when=getattr(r, "reviewed_at", None),
                mode=str(getattr(r, "mode", "review")),
                quality=int(r.quality),
                correct=bool(r.correct),
                answer=str(getattr(r, "answer_text", "")),
                interval=getattr(after, "interval", None),
                response_ms=int(getattr(r, "response_ms", 0) or 0),
            )
        )
    return rows


def stats_view(services: Services) -> StatsView:
    store = services.store
    retention = []
    for days in (7, 30, 90, 365):
        raw = store.true_retention(days)
        retention.append((f"{days} d", _ratio(raw), int(getattr(raw, "total", 0) or 0)))
    topics = []
    accuracy = store.topic_accuracy() or {}
    for t in accuracy.values() if isinstance(accuracy, dict) else accuracy:
        topics.append((services.topic_title(str(t.topic)), int(t.answered), int(t.correct)))
    lab: dict[tuple[str, int], list[Any]] = {}
    for attempt in store.lab_attempts() or ():
        lab.setdefault((str(attempt.exercise), int(attempt.level)), []).append(attempt)
    lab_rows = []
    for (exercise, level), attempts in sorted(lab.items()):
        passed = any(a.passed for a in attempts)
        best = min((a.duration_s for a in attempts if a.passed), default=None)
        lab_rows.append(
            (exercise, level, passed, len(attempts), "" if best is None else f"{best:.1f} s")
        )
    return StatsView(
        per_day=_per_day(store.reviews_per_day(365)),
        retention=retention,
        topics=topics,
        ef=_pairs(store.ef_distribution()),
        intervals=_pairs(store.interval_distribution()),
        forecast=_counts(store.forecast(30)),
        streak=int(store.streak() or 0),
        lab=lab_rows,
    )
