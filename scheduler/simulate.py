"""The plan as a forward simulation of the learner's own memory model (as FSRS's simulator
does): what following the plan will cost each day, and the recall it leads to.

Day by day from today to the day before the interview, a simulated learner studies exactly
what the app would queue: the reviews due (the ones already scheduled and those the simulation
schedules), oldest first, then the new cards the plan's pace introduces (`plan.paced_new_limit`,
in study order), within `review_limit`, then the re-drills of every card graded below 4 until it
is graded 4. Each answer is right with the card's predicted recall at that moment (FSRS, the
learner's parameters; a new card's first answer with the learner's own first-answer rate),
graded 4 when right and 1 when wrong, and scheduled by the rule the store applies
(`scheduler.next_states`, under the active scheduler), stepped in plain numbers: SM-2 by
`sm2.advance_numbers`, FSRS by `scheduler.fsrs_arith` (fsrs's own formulas, equal to its
`review_card` bit for bit), ~5x faster than building cards and datetimes for each of the
thousands of answers. Each answer takes the learner's median answer time;
the lab levels still to pass are spread over the days that introduce new cards. With a daily
budget the learner stops when the day's minutes are spent (reviews first, then new cards, then
re-drills), so the table of budgets shows what a smaller budget costs in recall.

The figures are means over a few seeded runs, so the same data always gives the same plan.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from scheduler import fsrs_memory
from scheduler.fsrs_arith import MS_PER_DAY, FsrsArith, elapsed_days, ms_of
from scheduler.plan import paced_new_limit
from scheduler.sm2 import advance_numbers
from scheduler.transition import REDRILL_UNTIL

if TYPE_CHECKING:
    from scheduler.fsrs_memory import Memory
    from scheduler.plan import Plan
    from scheduler.records import Scheduled, Settings

RIGHT_GRADE, WRONG_GRADE = 4, 1  # the simulated learner's grades
# Every answer of a simulated day is given at noon of the study day (local): FSRS counts whole
# days, so answers minutes apart on different days would shift a card's elapsed days by one.
ANSWER_HOUR = 12
DEFAULT_FIRST_RIGHT = 0.6  # share of new cards answered right the first time, before any


@dataclass(frozen=True)
class SimCard:
    """One card in study as it stands today."""

    question_id: str
    topic: str
    scheduled: Scheduled
    memory: Memory | None


@dataclass(frozen=True)
class Learner:
    """The learner's own speed and first-answer accuracy."""

    answer_s: float
    first_right: float = DEFAULT_FIRST_RIGHT


@dataclass(frozen=True)
class Forecast:
    """What following the plan costs and where it lands (means over the runs)."""

    answers: list[float]  # per day from today, up to the day before the interview
    card_minutes: list[float]  # per day: answers x the learner's seconds per answer
    lab_minutes: list[float]  # per day: the lab levels' share
    topic_recall: dict[str, float]  # on the interview day's start, over introduced cards
    intro_days: float  # days that introduce new cards
    topic_share: dict[str, float] | None = None  # the same over every card (new ones: 0)

    @property
    def minutes(self) -> list[float]:
        return [c + lab for c, lab in zip(self.card_minutes, self.lab_minutes, strict=True)]

    @property
    def mean_recall(self) -> float:
        values = list(self.topic_recall.values())
        return sum(values) / len(values) if values else 0.0

    @property
    def weakest(self) -> tuple[str, float] | None:
        if not self.topic_recall:
            return None
        topic = min(self.topic_recall, key=lambda t: (self.topic_recall[t], t))
        return topic, self.topic_recall[topic]

    @property
    def mean_share(self) -> float:
        """Mean over topics of the share of the topic's cards recalled (new cards count 0)."""
        values = list((self.topic_share or {}).values())
        return sum(values) / len(values) if values else 0.0

    @property
    def weakest_share(self) -> tuple[str, float] | None:
        share = self.topic_share or {}
        if not share:
            return None
        topic = min(share, key=lambda t: (share[t], t))
        return topic, share[topic]


class _Setting(NamedTuple):
    """What every simulated day shares: the plan, the rules, the learner and the budget. (The
    two internal records are named tuples: a frozen dataclass costs ~0.5 ms to define, on the
    home's first start.)"""

    plan: Plan
    settings: Settings
    fsrs: FsrsArith
    learner: Learner
    budget: float | None  # minutes a day at most; None: as long as the queue takes
    days: list[dt.date]  # from today to the day before the interview
    starts_ms: list[int]  # per day: when its answers are given (ms since the epoch)
    introduced_today: int  # new cards already introduced on the first day (today)

    @property
    def per_answer(self) -> float:
        return self.learner.answer_s / 60


class _Cards(NamedTuple):
    """The cards as they stand today, in plain numbers by index (cards in study order)."""

    due: list[int | None]  # the due day's ordinal; None: never scheduled
    sm2: list[tuple[int, int, int]]  # EF hundredths, repetitions, interval
    stability: list[float | None]  # None: no memory yet
    difficulty: list[float]
    last_ms: list[int]  # the memory's last answer (ms since the epoch)

    @classmethod
    def of(cls, cards: Sequence[SimCard]) -> _Cards:
        out = cls([], [], [], [], [])
        for c in cards:
            s, m = c.scheduled, c.memory
            out.due.append(None if s.due is None else s.due.toordinal())
            out.sm2.append((s.state.ef_hundredths, s.state.repetitions, s.state.interval))
            out.stability.append(None if m is None else m.stability)
            out.difficulty.append(0.0 if m is None else m.difficulty)
            out.last_ms.append(0 if m is None else ms_of(m.last_review))
        return out


class _Run:
    """One seeded run: each card's schedule and memory as the simulated learner answers: the
    rule the store applies (`scheduler.next_states.next_state`: SM-2's step, FSRS's interval
    under scheduler=fsrs, FSRS's memory step on every answer) on what it reads. A card's
    lapses and leech flag are left out, and under FSRS its SM-2 numbers: nothing the
    simulation queues or reports depends on them."""

    def __init__(self, setting: _Setting, rng: random.Random, cards: _Cards) -> None:
        self.setting, self.fsrs, self.random = setting, setting.fsrs, rng.random
        self.fsrs_due = setting.settings.scheduler == "fsrs"
        self.due, self.sm2 = list(cards.due), list(cards.sm2)
        self.stability, self.difficulty = list(cards.stability), list(cards.difficulty)
        self.last_ms = list(cards.last_ms)
        self.new = [n for n, d in enumerate(self.due) if d is None]  # in study order
        self.intro_days: list[int] = []  # days that introduced a card
        # The reviews due, oldest first (due day, then study order): those due by the day
        # looked at last, and the later ones by due day. An answer schedules a card after its
        # day, so each day adds the cards due that day behind the ones left over.
        first = setting.days[0].toordinal() if setting.days else 0
        self.waiting = sorted((d, n) for n, d in enumerate(self.due)
                              if d is not None and d <= first)
        self.later: dict[int, list[int]] = {}
        for n, d in enumerate(self.due):
            if d is not None and d > first:
                self.later.setdefault(d, []).append(n)

    def study_day(self, i: int) -> tuple[int, float]:
        """Day `i`: the due reviews oldest first, then the plan's new cards, then the
        re-drills, while the budget lasts. Returns (answers given, minutes spent)."""
        setting, settings = self.setting, self.setting.settings
        day = setting.days[i]
        today, now = day.toordinal(), setting.starts_ms[i]
        if i:
            self.waiting += [(today, n) for n in sorted(self.later.pop(today, ()))]
        due = [n for _, n in self.waiting[:settings.review_limit]]
        # today's cards introduced before now count against today's limit, as in the queue
        before = setting.introduced_today if i == 0 else 0
        paced = paced_new_limit(setting.plan, day, len(self.new) + before)
        cap = max(0, (settings.new_limit if paced is None else paced) - before)
        intro = self.new[:max(0, min(cap, settings.review_limit - len(due)))]
        per_answer = setting.per_answer
        # one more answer fits while spent + per_answer <= budget (+ a float margin)
        limit = math.inf if setting.budget is None else setting.budget + 1e-9
        first_right, answer = setting.learner.first_right, self._answer
        spent, given = 0.0, 0
        redrill: list[int] = []
        for n in due + intro:
            if spent + per_answer > limit:
                break
            if answer(n, True, now, today, first_right) < REDRILL_UNTIL:
                redrill.append(n)
            spent += per_answer
            given += 1
        del self.waiting[:min(given, len(due))]  # the reviews answered: a prefix of `due`
        introduced = max(0, given - len(due))  # the new cards answered: a prefix of `intro`
        if introduced:
            del self.new[:introduced]
            self.intro_days.append(i)
        while redrill and spent + per_answer <= limit:
            n = redrill.pop(0)
            if answer(n, False, now, today, 1.0) < REDRILL_UNTIL:
                redrill.append(n)
            spent += per_answer
            given += 1
        return given, spent

    def _answer(self, n: int, review: bool, now: int, today: int, unseen: float) -> int:
        """Answer card `n` at `now` (ms) on the day `today` (its ordinal), as a scheduled
        review or a re-drill: right with its recall then (`unseen` for a card with no memory
        yet); its state moves on. Returns the grade."""
        stability = self.stability[n]
        days = (now - self.last_ms[n]) // MS_PER_DAY  # elapsed_days, inline
        fsrs = self.fsrs
        p = unseen if stability is None else fsrs.recall(stability, days)
        grade = RIGHT_GRADE if self.random() < p else WRONG_GRADE
        self.stability[n], self.difficulty[n], fsrs_days = fsrs.step(
            stability, self.difficulty[n], days, grade)
        self.last_ms[n] = now
        if review:
            if self.fsrs_due:
                due = today + fsrs_days
            else:
                self.sm2[n] = ef_reps_interval = advance_numbers(*self.sm2[n], grade)
                due = today + ef_reps_interval[2]
            self.due[n] = due
            self.later.setdefault(due, []).append(n)
        return grade

    def recall_by_topic(self, cards: Sequence[SimCard], at: dt.datetime) -> dict[str, list[float]]:
        """Each topic's introduced cards' recall at `at` (new cards are left out)."""
        at_ms = ms_of(at)
        fsrs = self.setting.fsrs
        by_topic: dict[str, list[float]] = {}
        for n, c in enumerate(cards):
            values = by_topic.setdefault(c.topic, [])
            if self.due[n] is not None:  # introduced
                stability = self.stability[n]
                values.append(0.0 if stability is None
                              else fsrs.recall(stability, elapsed_days(at_ms, self.last_ms[n])))
        return by_topic


def _answer_times(plan: Plan, today: dt.date, day_start: Callable[[dt.date], dt.datetime],
                  settings: Settings) -> list[dt.datetime]:
    """When each day's answers are given, today to the day before the interview: at
    ANSWER_HOUR local (a study day starting at the rollover hour)."""
    noon = dt.timedelta(hours=ANSWER_HOUR - settings.rollover_hour % 24)
    if noon < dt.timedelta(0):
        noon += dt.timedelta(days=1)
    days = max(0, (plan.interview - today).days)
    return [day_start(today + dt.timedelta(days=i)) + noon for i in range(days)]


def simulate(
    cards: Sequence[SimCard], plan: Plan, today: dt.date,
    day_start: Callable[[dt.date], dt.datetime], settings: Settings,
    parameters: Sequence[float] | None,
    learner: Learner, lab_minutes_total: float = 0.0, budget: float | None = None,
    runs: int = 3, seed: int = 0, introduced_today: int = 0,
) -> Forecast:
    """Follow the plan from `today` to the interview, `runs` times; `cards` in study order (the
    never-answered ones are introduced in that order); `day_start(day)`: when a study day
    begins (UTC). `budget`: minutes a day the learner studies at most (None: as long as the
    queue takes). `introduced_today`: new cards already introduced today, which today's paced
    limit counts as the queue does (`scheduler.queue`)."""
    days = max(0, (plan.interview - today).days)
    interview_start = day_start(plan.interview)
    setting = _Setting(
        plan, settings,
        FsrsArith(fsrs_memory.make_scheduler(parameters, settings.desired_retention)),
        learner, budget, [today + dt.timedelta(days=i) for i in range(days)],
        [ms_of(t) for t in _answer_times(plan, today, day_start, settings)],
        introduced_today)
    answers = [0.0] * days
    card_minutes = [0.0] * days
    lab = [0.0] * days
    recall_sum: dict[str, float] = {c.topic: 0.0 for c in cards}
    share_sum: dict[str, float] = {c.topic: 0.0 for c in cards}
    sizes: dict[str, int] = {}
    for c in cards:
        sizes[c.topic] = sizes.get(c.topic, 0) + 1
    intro_total = 0.0
    start = _Cards.of(cards)
    for n in range(runs):
        run = _Run(setting, random.Random(seed * 1_000_003 + n), start)
        for i in range(days):
            given, spent = run.study_day(i)
            answers[i] += given / runs
            card_minutes[i] += spent / runs
        spread = run.intro_days or list(range(days))
        for i in spread:
            lab[i] += lab_minutes_total / len(spread) / runs
        intro_total += len(run.intro_days) / runs
        for topic, values in run.recall_by_topic(cards, interview_start).items():
            recall_sum[topic] += (sum(values) / len(values) if values else 0.0) / runs
            share_sum[topic] += sum(values) / sizes[topic] / runs
    return Forecast(answers, card_minutes, lab, recall_sum, intro_total, share_sum)
