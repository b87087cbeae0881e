"""The scheduler store and the question bank, opened together: what every screen talks to.

Heavy packages (SQLAlchemy via the scheduler) are imported inside `Services.open`, which the app
calls from a worker after the first paint.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.core.session import Item, Session
from trainer.core.writer import WriteBehind

if TYPE_CHECKING:
    from questions.bank import Bank
    from questions.model import Question
    from scheduler.records import Mode
    from scheduler.store import Store
    from scheduler.study import Kind
    from trainer.core.views import TodayView


class Services:
    """The store and the bank. `now` pins the clock (tests, snapshots, "what does tomorrow look
    like"); None is real time. Reads go through `store`, which first lands queued writes."""

    def __init__(self, store: Store, bank: Bank, now: dt.datetime | None = None) -> None:
        self._store = store
        self.bank = bank
        self.now = now
        self.rng = random.Random()
        self._writer = WriteBehind(store)

    @property
    def store(self) -> Store:
        """The store, once every queued write has landed (reads then see them)."""
        self._writer.flush()
        return self._store

    def write(self, fn: Callable[[Store], Any]) -> Future[Any]:
        """Queue a write; writes run one at a time in submission order."""
        return self._writer.submit(fn)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        """Finish queued writes and close the database."""
        self._writer.close()
        self._store.close()

    @classmethod
    def open(
        cls,
        db_path: Path | None = None,
        bank_paths: Sequence[Path] | None = None,
        now: dt.datetime | None = None,
    ) -> Services:
        """Open the store and load the bank; new questions get cards. Slow-ish: call off-thread.
        The store opens in a second thread while the bank loads (SQLite and file reads release
        the GIL), so the day's data is ready sooner."""
        from concurrent.futures import ThreadPoolExecutor

        from trainer.core.bank import load_study_bank, sync_bank
        from trainer.core.store import open_store

        why_read_only: list[str] = []  # healthy but unwritable: browse it, say so
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dojo-store") as pool:
            opening = pool.submit(open_store, db_path, browse=True,
                                  on_read_only=why_read_only.append)
            try:
                bank = load_study_bank(bank_paths)  # every kind: case studies step by step
            except BaseException:
                opening.add_done_callback(_close_opened)
                raise
            store = opening.result()  # raises what opening the store raised
        store.warnings.extend(f"{why} Browsing it read-only." for why in why_read_only)
        if store.writable:
            sync_bank(store, bank)  # its note is the bank's errors, which Today shows
        return cls(store, bank, now)

    def warnings(self) -> list[str]:
        """What the learner should know that did not stop the app: a failed daily backup,
        read-only browsing, settings that fell back to their defaults."""
        store = self.store
        store.settings()
        return [*store.warnings, *([store.settings_problem] if store.settings_problem else [])]

    # -- the bank ------------------------------------------------------------------------

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

    def today(self, *, plan: bool = True) -> TodayView:
        from trainer.core.views import today_view

        return today_view(self, plan=plan)

    # -- card actions (Browse and the review screen) -------------------------------------

    def suspend(self, question_id: str) -> None:
        self.store.suspend(question_id)

    def unsuspend(self, question_id: str) -> None:
        self.store.unsuspend(question_id)

    def bury(self, question_id: str) -> None:
        self.store.bury(question_id, self.now)

    # -- labs that come back -------------------------------------------------------------

    def start_rebuild(self, exercise: str, level: int) -> tuple[Path, Any]:
        """Start rebuilding a due lab level (`lab.rebuild.start_rebuild`): the learner's file
        moved aside (restorable), a blank stub, the clock. Returns (stub path, the rehearsal).
        Raises ValueError (an unknown exercise, a level never passed) saying why."""
        from lab.exercises import ExerciseError, get
        from lab.rebuild import start_rebuild
        from lab.workspace import LabState

        try:
            chosen = get(exercise)
        except ExerciseError as exc:
            raise ValueError(str(exc)) from exc
        path, session, _card = start_rebuild(LabState(self.store), chosen, level)
        return path, session

    # -- sessions ------------------------------------------------------------------------

    def draw(
        self, question_id: str, mode: Mode, seed: int | None = None, *, new: bool = False
    ) -> Item:
        question = self.question(question_id)
        seed = self.rng.randrange(2**31) if seed is None else seed
        return Item(question_id, mode, seed, question, question.draw(seed), new)

    def answered_elsewhere(self, question_id: str) -> bool:
        """Whether another window answered this card's review today (it is no longer due), so
        showing it would only end in "not recorded". Reads without waiting for this window's
        queued writes: they are other cards'."""
        from scheduler.errors import StoreError

        try:
            return self._store.answered_today(question_id, self.now)
        except StoreError:
            return False

    def cannot_save(self) -> str | None:
        """Why an answer could not be saved now (read-only file or folder), or None: a session
        is refused before its first card rather than losing each answer to "not saved"."""
        from scheduler.errors import StoreError

        try:
            self.store.check_writable()
        except StoreError as exc:
            return str(exc)
        return None

    def draw_fresh(
        self, question_id: str, mode: Mode, answered_seed: int | None, tries: int = 16
    ) -> Item:
        """A draw whose numbers (or, for a fixed MCQ, choice order) differ from the draw last
        answered (`answered_seed`), when the question has another: a re-drill must not repeat
        the numbers just answered."""
        item = self.draw(question_id, mode)
        if answered_seed is None:
            return item
        seen = _draw_key(item.question.draw(answered_seed))
        for _ in range(tries):
            if _draw_key(item.instance) != seen:
                break
            item = self.draw(question_id, mode)
        return item

    def _last_seed(self, question_id: str) -> int | None:
        """The seed of the card's latest logged answer, if it kept one."""
        history = self.store.history(question_id)
        params = history[-1].params if history else None
        seed = (params or {}).get("seed")
        return seed if isinstance(seed, int) else None

    def start_session(self) -> Session:
        """Today's scheduled cards: due reviews, new cards, questions a failed lab case brought
        back, then re-drills left from earlier."""
        queue = self.store.today_queue(self.now)
        known = {q.id for q in self.bank.questions}
        items = [
            self.draw(i.question_id, "review") for i in queue.reviews if i.question_id in known
        ]
        items += [self.draw(i.question_id, "review", new=True)
                  for i in queue.new if i.question_id in known]
        # Brought back by a failed lab case: practised without rescheduling (lab.concepts).
        items += [self.draw(i.question_id, "redrill") for i in queue.lab if i.question_id in known]
        pending = [i.question_id for i in queue.redrill if i.question_id in known]
        seeds = {q: seed for q in pending if (seed := self._last_seed(q)) is not None}
        return Session(self, items, pending, cram=False, answered_seeds=seeds)

    def start_custom(
        self, kind: Kind, *, days: int = 7, topic: str | None = None, limit: int = 20,
        reschedule: bool = False,
    ) -> tuple[str, Session]:
        """A custom study session (scheduler.study): practice that leaves the schedule alone,
        or, with `reschedule`, counts the selected cards due today as their scheduled review.
        Every card is drawn with fresh numbers. Returns (the set's title, the session)."""
        from scheduler.study import select_cards

        store = self.store
        chosen = select_cards(store, kind, days=days, topic=topic, limit=limit, now=self.now)
        today = store.study_day(self.now)
        known = {q.id for q in self.bank.questions}
        items = []
        for qid in chosen.question_ids:
            if qid not in known:
                continue
            due = store.card(qid).due
            mode: Mode = "review" if reschedule and due is not None and due <= today else "cram"
            items.append(self.draw_fresh(qid, mode, self._last_seed(qid)))
        cram = all(i.mode == "cram" for i in items)
        return chosen.title, Session(self, items, [], cram=cram)

    def start_cram(self, topic: str | None = None, limit: int = 20) -> Session:
        """Practice without touching the schedule: a shuffled slice of a topic (or everything)."""
        ids = [q.id for q in self.bank.questions if topic is None or q.topic == topic]
        self.rng.shuffle(ids)
        return Session(self, [self.draw(i, "cram") for i in ids[:limit]], [], cram=True)


def _draw_key(instance: Any) -> tuple[Any, ...]:
    """What the learner sees change between draws: the values and the MCQ choice order."""
    values = tuple(sorted((str(k), repr(v)) for k, v in instance.values.items()))
    return values, tuple(instance.order), tuple(_draw_key(s) for s in instance.steps)


def _close_opened(opening: Future[Store]) -> None:
    """The bank failed to load: close the store opened beside it (if it opened)."""
    if opening.exception() is None:
        opening.result().close()
