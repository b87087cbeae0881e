"""The plan as a forward simulation of the learner's own memory model (as FSRS's simulator
does): what following the plan will cost each day, and the recall it leads to.

Day by day from today to the day before the interview, a simulated learner studies exactly
what the app would queue: the reviews due (the ones already scheduled and those the simulation
schedules), oldest first, then the new cards the plan's pace introduces (`plan.paced_new_limit`,
in study order), within `review_limit`, then the re-drills of every card graded below 4 until it
is graded 4. Each answer is right with the card's predicted recall at that moment (FSRS, the
learner's parameters; a new card's first answer with the learner's own first-answer rate),
graded 4 when right and 1 when wrong, and scheduled by `scheduler.next_states` (the rule the
store applies, under the active scheduler). Each answer takes the learner's median answer time;
the lab levels still to pass are spread over the days that introduce new cards. With a daily
budget the learner stops when the day's minutes are spent (reviews first, then new cards, then
re-drills), so the table of budgets shows what a smaller budget costs in recall.

The figures are means over a few seeded runs, so the same data always gives the same plan.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler import fsrs_memory
from scheduler.next_states import next_state
from scheduler.plan import paced_new_limit
from scheduler.transition import REDRILL_UNTIL

if TYPE_CHECKING:
    from fsrs import Scheduler

    from scheduler.fsrs_memory import Memory
    from scheduler.plan import Plan
    from scheduler.records import Mode, Scheduled, Settings

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


def _fits(spent: float, per_answer: float, budget: float | None) -> bool:
    """Whether one more answer fits the day's budget."""
    return budget is None or spent + per_answer <= budget + 1e-9


@dataclass(frozen=True)
class _Setting:
    """What every simulated day shares: the plan, the rules, the learner and the budget."""

    plan: Plan
    settings: Settings
    parameters: Sequence[float] | None
    fsrs: Scheduler
    learner: Learner
    budget: float | None  # minutes a day at most; None: as long as the queue takes
    starts: list[dt.datetime]  # per day from today: when its answers are given (UTC)

    @property
    def per_answer(self) -> float:
        return self.learner.answer_s / 60


@dataclass
class _Run:
    """One seeded run: each card's schedule and memory as the simulated learner answers."""

    setting: _Setting
    rng: random.Random
    state: dict[str, tuple[Scheduled, Memory | None]]
    new: list[str]  # never-answered cards, in study order
    intro_days: list[int] = field(default_factory=list)  # days that introduced a card

    def study_day(self, i: int, day: dt.date) -> tuple[int, float]:
        """Day `i` (`day`): the due reviews oldest first, then the plan's new cards, then the
        re-drills, while the budget lasts. Returns (answers given, minutes spent)."""
        setting, settings = self.setting, self.setting.settings
        due = sorted((s.due, n, qid) for n, (qid, (s, _)) in enumerate(self.state.items())
                     if s.due is not None and s.due <= day)
        due = due[:settings.review_limit]
        paced = paced_new_limit(setting.plan, day, len(self.new))
        cap = settings.new_limit if paced is None else paced
        intro = self.new[:max(0, min(cap, settings.review_limit - len(due)))]
        spent, given = 0.0, 0
        redrill: list[str] = []
        for kind, qid in [("review", q) for *_, q in due] + [("new", q) for q in intro]:
            if not _fits(spent, setting.per_answer, setting.budget):
                break
            if self._answer(qid, "review", i, day, setting.learner.first_right) < REDRILL_UNTIL:
                redrill.append(qid)
            spent += setting.per_answer
            given += 1
            if kind == "new":
                self.new.remove(qid)
        if any(q not in self.new for q in intro):
            self.intro_days.append(i)
        while redrill and _fits(spent, setting.per_answer, setting.budget):
            qid = redrill.pop(0)
            if self._answer(qid, "redrill", i, day, 1.0) < REDRILL_UNTIL:
                redrill.append(qid)
            spent += setting.per_answer
            given += 1
        return given, spent

    def _answer(self, qid: str, mode: Mode, i: int, day: dt.date, unseen: float) -> int:
        """Answer a card on day `i`: right with its recall then (`unseen` for a card with no
        memory yet); its state moves on. Returns the grade."""
        setting = self.setting
        scheduled, memory = self.state[qid]
        moment = setting.starts[i]
        p = unseen if memory is None else fsrs_memory.recall(memory, moment, setting.fsrs)
        grade = RIGHT_GRADE if self.rng.random() < p else WRONG_GRADE
        nxt = next_state(scheduled, memory, mode, moment, day, setting.settings,
                         setting.parameters, grade, setting.fsrs)
        self.state[qid] = (nxt.scheduled, nxt.memory)
        return grade

    def recall_by_topic(self, cards: Sequence[SimCard],
                        at: dt.datetime) -> dict[str, list[float]]:
        """Each topic's introduced cards' recall at `at` (new cards are left out)."""
        by_topic: dict[str, list[float]] = {}
        for c in cards:
            scheduled, memory = self.state[c.question_id]
            values = by_topic.setdefault(c.topic, [])
            if scheduled.due is not None:  # introduced
                values.append(0.0 if memory is None
                              else fsrs_memory.recall(memory, at, self.setting.fsrs))
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
    runs: int = 3, seed: int = 0,
) -> Forecast:
    """Follow the plan from `today` to the interview, `runs` times; `cards` in study order (the
    never-answered ones are introduced in that order); `day_start(day)`: when a study day
    begins (UTC). `budget`: minutes a day the learner studies at most (None: as long as the
    queue takes)."""
    days = max(0, (plan.interview - today).days)
    interview_start = day_start(plan.interview)
    setting = _Setting(plan, settings, parameters,
                       fsrs_memory.make_scheduler(parameters, settings.desired_retention),
                       learner, budget, _answer_times(plan, today, day_start, settings))
    answers = [0.0] * days
    card_minutes = [0.0] * days
    lab = [0.0] * days
    recall_sum: dict[str, float] = {c.topic: 0.0 for c in cards}
    share_sum: dict[str, float] = {c.topic: 0.0 for c in cards}
    sizes: dict[str, int] = {}
    for c in cards:
        sizes[c.topic] = sizes.get(c.topic, 0) + 1
    intro_total = 0.0
    for n in range(runs):
        run = _Run(setting, random.Random(seed * 1_000_003 + n),
                   {c.question_id: (c.scheduled, c.memory) for c in cards},
                   [c.question_id for c in cards if c.scheduled.due is None])
        for i in range(days):
            given, spent = run.study_day(i, today + dt.timedelta(days=i))
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
