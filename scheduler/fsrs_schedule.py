"""FSRS as a scheduler option (`dojo settings scheduler=fsrs`) and fitting the learner's own
FSRS parameters from their answer log (`dojo fsrs fit`).

With scheduler=fsrs a scheduled review still runs the SM-2 rule (EF, repetitions, lapses, leech
stay what SM-2 would keep, so switching back continues from there), but its interval and due day
come from an FSRS replay of all the card's answers (scheduler.readiness: same grades, same
replay) at desired retention 0.9: the whole history counts either way.

Fitting needs the optimiser extra (`pip install "fsrs[optimizer]"`, which uses torch and pandas)
and at least MIN_FIT_REVIEWS answers given on a later day than the card's previous one (the only
answers the optimiser learns from; with fewer it returns the defaults).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.readiness import make_scheduler, rating, replay

MIN_FIT_REVIEWS = 512  # fsrs.optimizer's mini-batch: below it, it returns the defaults


def fsrs_interval(
    answers: Sequence[tuple[dt.datetime, int]], parameters: Sequence[float] | None = None
) -> int:
    """Days until the next review after these answers (the last one is today's), >= 1."""
    scheduler = make_scheduler(parameters)
    card = replay(answers, scheduler)
    assert card is not None and card.last_review is not None
    return max(1, round((card.due - card.last_review) / dt.timedelta(days=1)))


def learnable(history: Mapping[str, Sequence[tuple[dt.datetime, int]]]) -> int:
    """Answers given on a later (UTC) day than the card's previous answer."""
    count = 0
    for answers in history.values():
        for (before, _), (when, _) in itertools.pairwise(answers):
            count += (when - before).days > 0
    return count


def log_loss(
    history: Mapping[str, Sequence[tuple[dt.datetime, int]]],
    parameters: Sequence[float] | None = None,
) -> float:
    """Mean binary cross-entropy of the predicted recall against recalled (grade >= 3) over the
    learnable answers: lower is a better memory model for this learner."""
    scheduler = make_scheduler(parameters)
    total = 0.0
    n = 0
    for i, answers in enumerate(history.values(), start=1):
        card = None
        for when, quality in answers:
            if card is not None and card.last_review is not None and (
                    when - card.last_review).days > 0:
                p = min(max(float(scheduler.get_card_retrievability(card, when)), 1e-6),
                        1 - 1e-6)
                recalled = quality >= 3
                total -= math.log(p if recalled else 1 - p)
                n += 1
            card = replay([(when, quality)], scheduler, card_id=i) if card is None else \
                scheduler.review_card(card, rating(quality), when)[0]
    return total / n if n else float("nan")


@dataclass(frozen=True)
class Fit:
    parameters: list[float]
    before: float  # log-loss with the parameters in use
    after: float  # log-loss with the fitted ones
    reviews: int  # learnable answers used


def fit(
    history: Mapping[str, Sequence[tuple[dt.datetime, int]]],
    current: Sequence[float] | None = None,
) -> Fit:
    """Fit FSRS parameters to the history with the package's optimiser. Raises ImportError
    when the optimiser extra is missing, ValueError when there are too few answers."""
    n = learnable(history)
    if n < MIN_FIT_REVIEWS:
        raise ValueError(
            f"{n} of the {MIN_FIT_REVIEWS} answers needed to fit FSRS to you (answers given on "
            f"a later day than the card's previous one); {MIN_FIT_REVIEWS - n} to go")
    from fsrs import Optimizer, ReviewLog  # the optimiser extra: torch and pandas

    logs = [ReviewLog(card_id=i, rating=rating(q), review_datetime=when.astimezone(dt.UTC),
                      review_duration=None)
            for i, answers in enumerate(history.values(), start=1) for when, q in answers]
    fitted = [float(w) for w in Optimizer(logs).compute_optimal_parameters()]
    return Fit(fitted, log_loss(history, current), log_loss(history, fitted), n)
