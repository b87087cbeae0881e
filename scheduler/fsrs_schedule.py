"""Fitting the learner's own FSRS parameters from their answer log (`dojo fsrs fit`).

Scheduling with FSRS (`dojo settings scheduler=fsrs`) is `scheduler.next_states`; the memory
state it reads is `scheduler.fsrs_memory`. Fitting needs the optimiser extra
(`pip install "fsrs[optimizer]"`, which uses torch and pandas) and at least MIN_FIT_REVIEWS
answers given at least 24 hours after the card's previous answer (the only answers the
optimiser learns from: it skips an answer whose whole elapsed days are 0; with fewer it returns
the defaults). Answers count in time order, as everywhere else.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.fsrs_memory import make_scheduler, rating, recall, step

MIN_FIT_REVIEWS = 512  # fsrs.optimizer's mini-batch: below it, it returns the defaults
Answers = Sequence[tuple[dt.datetime, int]]


def _in_time_order(answers: Answers) -> list[tuple[dt.datetime, int]]:
    return sorted(answers, key=lambda a: a[0].astimezone(dt.UTC))


def learnable(history: Mapping[str, Answers]) -> int:
    """Answers given at least 24 hours after the card's previous answer."""
    count = 0
    for answers in history.values():
        for (before, _), (when, _) in itertools.pairwise(_in_time_order(answers)):
            count += (when - before).days > 0
    return count


def log_loss(history: Mapping[str, Answers], parameters: Sequence[float] | None = None) -> float:
    """Mean binary cross-entropy of the predicted recall against recalled (grade >= 3) over the
    learnable answers (the ones `learnable` counts): lower is a better model for this learner."""
    scheduler = make_scheduler(parameters)
    total = 0.0
    n = 0
    for answers in history.values():
        memory = None
        for when, quality in _in_time_order(answers):
            if memory is not None and (when - memory.last_review).days > 0:
                p = min(max(recall(memory, when, scheduler), 1e-6), 1 - 1e-6)
                total -= math.log(p if quality >= 3 else 1 - p)
                n += 1
            memory, _ = step(memory, quality, when, scheduler)
    return total / n if n else float("nan")


@dataclass(frozen=True)
class Fit:
    parameters: list[float]
    before: float  # log-loss with the parameters in use
    after: float  # log-loss with the fitted ones
    reviews: int  # learnable answers used


def fit(history: Mapping[str, Answers], current: Sequence[float] | None = None) -> Fit:
    """Fit FSRS parameters to the history with the package's optimiser. Raises ImportError
    when the optimiser extra is missing, ValueError when there are too few answers."""
    n = learnable(history)
    if n < MIN_FIT_REVIEWS:
        raise ValueError(
            f"{n} of the {MIN_FIT_REVIEWS} answers needed to fit FSRS to you (answers given at "
            f"least 24 hours after the card's previous one); {MIN_FIT_REVIEWS - n} to go")
    from fsrs import Optimizer, ReviewLog  # the optimiser extra: torch and pandas

    logs = [ReviewLog(card_id=i, rating=rating(q), review_datetime=when.astimezone(dt.UTC),
                      review_duration=None)
            for i, answers in enumerate(history.values(), start=1)
            for when, q in _in_time_order(answers)]
    fitted = [float(w) for w in Optimizer(logs).compute_optimal_parameters()]
    return Fit(fitted, log_loss(history, current), log_loss(history, fitted), n)
