"""Random inputs of the plan's simulation (`scheduler.simulate.simulate`) and its output as
plain data: the cases `test_simulate_exact.py` recomputes and compares, number for number,
with `simulate_expected.json` (the forecasts the step-by-step simulation gave, before the
fast path; regenerate only for a deliberate change of the plan's numbers:
`python -m tests.scheduler.plan_cases > tests/scheduler/simulate_expected.json`).

Each case is drawn from its seed alone: cards new, due, overdue, answered earlier today (FSRS's
same-day step), with or without a memory; both schedulers; default or perturbed FSRS weights;
time zones with daylight-saving changes and half-hour offsets; budgets; review limits that cut
the queue; plans from 0 to 45 days ahead; a few of a bank's size.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.days import resolve_timezone
from scheduler.fsrs_memory import Memory
from scheduler.plan import Plan
from scheduler.readiness import day_start
from scheduler.records import Scheduled, Settings
from scheduler.simulate import Forecast, Learner, SimCard, simulate
from scheduler.sm2 import CardState

ZONES = ("UTC", "America/New_York", "Asia/Kolkata", "Pacific/Auckland", "Europe/London")
# Days that put a daylight-saving change inside a plan's window, and ordinary ones.
TODAYS = (dt.date(2026, 3, 1), dt.date(2026, 10, 20), dt.date(2026, 9, 20),
          dt.date(2027, 1, 10), dt.date(2026, 6, 15))
FSRS_DEFAULTS = (0.212, 1.2931, 2.3065, 8.2956, 6.4133, 0.8334, 3.0194, 0.001, 1.8722, 0.1666,
                 0.796, 1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658,
                 0.1542)
FSRS_LOW = (0.001, 0.001, 0.001, 0.001, 1.0, 0.001, 0.001, 0.001, 0.0, 0.0, 0.001, 0.001, 0.001,
            0.001, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.1)
FSRS_HIGH = (100.0, 100.0, 100.0, 100.0, 10.0, 4.0, 4.0, 0.75, 4.5, 0.8, 3.5, 5.0, 0.25, 0.9,
             4.0, 1.0, 6.0, 2.0, 2.0, 0.8, 0.8)
SEEDS = range(64)
BIG_SEEDS = range(60, 64)  # a bank's worth of cards, a month to the interview (as the bench's)


@dataclass(frozen=True)
class Case:
    cards: list[SimCard]
    plan: Plan
    today: dt.date
    day_start: Callable[[dt.date], dt.datetime]
    settings: Settings
    parameters: tuple[float, ...] | None
    learner: Learner
    lab_minutes: float
    budget: float | None
    runs: int
    seed: int

    def forecast(self) -> Forecast:
        return simulate(self.cards, self.plan, self.today, self.day_start, self.settings,
                        self.parameters, self.learner, self.lab_minutes, self.budget,
                        runs=self.runs, seed=self.seed)


def _parameters(rng: random.Random) -> tuple[float, ...] | None:
    if rng.random() < 0.4:
        return None
    return tuple(min(high, max(low, w * rng.uniform(0.7, 1.3)))
                 for w, low, high in zip(FSRS_DEFAULTS, FSRS_LOW, FSRS_HIGH, strict=True))


def _card(rng: random.Random, n: int, topics: int, today: dt.date,
          start: Callable[[dt.date], dt.datetime]) -> SimCard:
    qid, topic = f"q{n:03d}", f"t{rng.randrange(topics)}"
    kind = rng.random()
    memory: Memory | None = None
    if kind < 0.3:  # new: never scheduled (a crammed one has a memory already)
        if rng.random() < 0.15:
            memory = Memory(rng.uniform(0.05, 5.0), rng.uniform(1.0, 10.0),
                            start(today) - dt.timedelta(days=rng.randrange(1, 20)))
        return SimCard(qid, topic, Scheduled(CardState(), None, 0, False), memory)
    reps = rng.randrange(0, 9)
    state = CardState(rng.randrange(130, 300), reps, rng.choice((1, 6, rng.randrange(1, 200))))
    due = today + dt.timedelta(days=rng.randrange(-60, 60))
    lapses = rng.randrange(0, 9)
    if rng.random() < 0.93:
        if rng.random() < 0.1:  # answered earlier today: FSRS's same-day step next
            last = start(today) + dt.timedelta(hours=rng.uniform(0, 6))
        else:
            last = start(today) - dt.timedelta(days=rng.uniform(0.2, 300))
        last = last + dt.timedelta(microseconds=rng.randrange(1000))
        memory = Memory(rng.choice((rng.uniform(0.001, 3.0), rng.uniform(1.0, 400.0))),
                        rng.uniform(1.0, 10.0), last)
    return SimCard(qid, topic, Scheduled(state, due, lapses, rng.random() < 0.1), memory)


def case(seed: int) -> Case:
    """The case drawn from `seed`."""
    rng = random.Random(seed)
    zone = ZONES[seed % len(ZONES)]
    settings = Settings(
        new_limit=rng.randrange(0, 30), review_limit=rng.choice((rng.randrange(3, 40), 200)),
        rollover_hour=rng.randrange(0, 24), timezone=zone, leech_lapses=rng.randrange(2, 9),
        scheduler="fsrs" if seed % 2 else "sm2",
        desired_retention=round(rng.uniform(0.70, 0.97), 2))
    tz = resolve_timezone(zone)

    def start(day: dt.date) -> dt.datetime:
        return day_start(day, settings.rollover_hour, tz)

    today = TODAYS[seed // 2 % len(TODAYS)] + dt.timedelta(days=rng.randrange(0, 5))
    big = seed in BIG_SEEDS
    days = rng.randrange(25, 40) if big else rng.choice((0, 1, 5, 8, rng.randrange(9, 46)))
    size = rng.randrange(200, 400) if big else rng.randrange(1, 90)
    cards = [_card(rng, n, rng.randrange(1, 6), today, start) for n in range(size)]
    return Case(
        cards, Plan(today + dt.timedelta(days=days), rng.randrange(10, 120)), today, start,
        settings, _parameters(rng), Learner(rng.uniform(3, 60), rng.random()),
        rng.choice((0.0, rng.uniform(0, 900))), rng.choice((None, rng.uniform(1, 90))),
        rng.randrange(1, 4), rng.randrange(0, 1000))


def as_data(forecast: Forecast) -> dict[str, Any]:
    """The forecast as JSON data (floats written exactly: json uses repr)."""
    return {"answers": forecast.answers, "card_minutes": forecast.card_minutes,
            "lab_minutes": forecast.lab_minutes, "topic_recall": forecast.topic_recall,
            "intro_days": forecast.intro_days, "topic_share": forecast.topic_share}


if __name__ == "__main__":
    print(json.dumps({str(seed): as_data(case(seed).forecast())
                      for seed in SEEDS}, indent=None, sort_keys=True))
