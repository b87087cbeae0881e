"""A plan to the interview day: the pace of new cards, what following it costs each day, and
where each topic will stand on the day.

With a plan, the daily new-card limit is replaced by the pace that introduces every remaining
new card by INTRO_LEAD_DAYS days before the interview (that day included; the days after it are
for review and a mock round). What a day costs is a forward simulation of the learner's own
memory model (`scheduler.simulate`, run by `scheduler.feasibility`): their FSRS parameters,
seconds per answer, first-answer accuracy, the pace, re-drills after a miss and the reviews
already scheduled; plus the lab levels still to pass, each at a per-level estimate
(`lab_level_minutes`), spread over the days that introduce new cards. The plan is feasible when
the busiest day fits the budget.
Pure functions over plain data: the caller (trainer.core.plan) brings the bank's topics and lab
links.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INTRO_LEAD_DAYS = 7  # every card introduced at least this many days before the interview
DEFAULT_ANSWER_S = 30.0  # before the learner has answered anything
PLAN_KEY = "plan"  # settings-table key: {"interview": "YYYY-MM-DD", "minutes": N}


def parse_day(text: str) -> dt.date:
    """A plan's date typed as YYYY-MM-DD (`dojo plan --interview`, the app's plan screen).
    Raises ValueError naming the bad part (month 13, 30 February) rather than only the shape."""
    import re  # not on the home's start path

    shape = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text.strip())
    if shape is None:
        raise ValueError(f"{text!r} is not a date YYYY-MM-DD")
    year, month, day = (int(part) for part in shape.groups())
    if year < 1:
        raise ValueError(f"{text!r}: year must be 0001-9999, not {shape[1]}")
    if not 1 <= month <= 12:
        raise ValueError(f"{text!r}: month must be 1-12, not {month}")
    first = dt.date(year, month, 1)
    last = 31 if month == 12 else (dt.date(year, month + 1, 1) - first).days
    if not 1 <= day <= last:
        raise ValueError(f"{text!r}: day must be 1-{last} in {first:%B %Y}, not {day}")
    return dt.date(year, month, day)


@dataclass(frozen=True)
class Plan:
    interview: dt.date
    minutes: int  # the learner's daily time budget

    def to_json(self) -> dict[str, Any]:
        return {"interview": self.interview.isoformat(), "minutes": self.minutes}

    @classmethod
    def from_json(cls, value: Any) -> Plan | None:
        """The stored plan, or None when absent or unreadable."""
        try:
            return cls(dt.date.fromisoformat(value["interview"]), int(value["minutes"]))
        except (TypeError, KeyError, ValueError):
            return None

    def intro_deadline(self) -> dt.date:
        """The last day a new card may be introduced."""
        return self.interview - dt.timedelta(days=INTRO_LEAD_DAYS)


def intro_days(plan: Plan, today: dt.date) -> int:
    """Study days left for introducing new cards, today included (0 once the window closed)."""
    return max(0, (plan.intro_deadline() - today).days + 1)


def paced_new_limit(plan: Plan, today: dt.date, new_at_day_start: int) -> int | None:
    """Today's new-card limit under the plan: the day's share of the cards still new at the
    start of the day, `ceil(new / study days left up to the deadline, today included)`, where
    the deadline is INTRO_LEAD_DAYS days before the interview (it introduces too); 0 after it
    (review and a mock round). None once the interview day has passed: the usual limit
    applies again."""
    if today > plan.interview:
        return None
    days = intro_days(plan, today)
    return math.ceil(new_at_day_start / days) if days else 0


DEFAULT_LEVEL_MINUTES = {1: 30.0, 2: 45.0, 3: 60.0}  # a lab level to pass, before any pass
DEFAULT_DEEPER_LEVEL_MINUTES = 60.0  # levels 4 and up
MIN_TIMED_PASS_S = 60.0  # a quicker pass was not built from a blank stub: not a timing
LAB_FACTOR_RANGE = (0.5, 3.0)  # the learner's speed against the defaults, clamped


def default_level_minutes(level: int) -> float:
    """The stated default time to pass a lab level (docs/readiness.md)."""
    return DEFAULT_LEVEL_MINUTES.get(level, DEFAULT_DEEPER_LEVEL_MINUTES)


def _median(values: Sequence[float]) -> float:
    """`statistics.median`'s value (the middle one, or the mean of the middle two), without
    importing `statistics` (with `decimal` and `fractions`) on the home's start."""
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


@dataclass(frozen=True)
class Pace:
    """The learner's own speed: seconds per answer, the share of new cards answered right the
    first time, and how their timed lab passes compare with the per-level defaults."""

    answer_s: float = DEFAULT_ANSWER_S
    first_right: float = 0.6
    lab_factor: float = 1.0  # 1.0: the defaults; 0.5: twice as fast
    lab_timed: int = 0  # timed passes the factor comes from

    @classmethod
    def from_answers(cls, reviews: Sequence[Mapping[str, Any]],
                     passes: Iterable[tuple[int, float | None]] = ()) -> Pace:
        """From exported answer rows and the lab cards' (level, seconds of the latest timed
        pass); the defaults before there are any. Passes under MIN_TIMED_PASS_S are left out."""
        return cls.measured(
            (int(r["response_ms"]) for r in reviews),
            (int(r["quality"]) for r in reviews
             if r["mode"] == "review" and r["before"]["due"] is None),
            passes)

    @classmethod
    def measured(cls, response_ms: Iterable[int], first_grades: Iterable[int],
                 passes: Iterable[tuple[int, float | None]] = ()) -> Pace:
        """From every answer's response time (ms; 0: not timed), the grades of new cards' first
        scheduled answers and the lab cards' (level, seconds of the latest timed pass): what
        `from_answers` reads out of exported rows, and `scheduler.quick.read_pace` out of the
        database."""
        times = [ms for ms in response_ms if ms > 0]
        first = [grade >= 3 for grade in first_grades]
        ratios = [s / 60 / default_level_minutes(level) for level, s in passes
                  if s is not None and s >= MIN_TIMED_PASS_S]
        low, high = LAB_FACTOR_RANGE
        return cls(
            answer_s=_median(times) / 1000 if times else DEFAULT_ANSWER_S,
            first_right=sum(first) / len(first) if first else 0.6,
            lab_factor=min(high, max(low, _median(ratios))) if ratios else 1.0,
            lab_timed=len(ratios),
        )

    def lab_level_minutes(self, level: int) -> float:
        """Minutes to pass a lab level: the default for the level times the learner's factor
        (never 0)."""
        return default_level_minutes(level) * self.lab_factor
