"""Feed every named mistake's value through the checker, as a learner who made it would type it.

Shared by the built-in bank's test and the user-pack QA test: a mistake typed exactly as its
formula gives it (rounded to the 6 significant digits feedback shows) must be graded wrong with
that mistake named, except on the rare draws where it coincides with the answer (the validator's
2% rule), which are counted and bounded instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from questions.answers import check_answer
from questions.model import Question
from questions.units import format_quantity
from questions.validate import CHECK_DRAWS, RARE_COINCIDENCE


@dataclass
class Fed:
    draws: int = 0
    coincided: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def feed_mistakes(question: Question, draws: int = CHECK_DRAWS) -> Fed:
    """Type each mistake's value on `draws` seeded draws; record what the checker said."""
    fed = Fed(coincided={m.id: 0 for m in question.mistakes})
    assert question.tolerance is not None
    for seed in range(draws if question.parameterised else 1):
        instance = question.draw(seed)
        assert instance.answer is not None
        fed.draws += 1
        values = instance.mistake_values()
        for mistake, value in values:
            typed = format_quantity(value, question.unit)
            outcome = check_answer(instance, typed)
            if outcome.reask and outcome.message.endswith("type more digits"):
                # the mistake and the answer read the same at these digits; a learner asked for
                # more digits types the mistake's value in full, and is diagnosed then
                typed = f"{value:#.6g}"
                outcome = check_answer(instance, typed)
            if outcome.reask:
                fed.failures.append(f"{question.id} seed {seed}: {mistake.id} typed {typed!r} "
                                    f"was re-asked: {outcome.message}")
                continue
            if outcome.correct:
                fed.coincided[mistake.id] += 1
                continue
            # another mistake with the same value on this draw may be named first
            same = {m.id for m, v in values if question.tolerance.accepts(v, outcome.given_value
                                                                          or 0.0)}
            if outcome.mistake_id not in same or mistake.id not in same:
                fed.failures.append(f"{question.id} seed {seed}: {mistake.id} typed {typed!r} "
                                    f"was named {outcome.mistake_id!r}")
            elif outcome.diagnosis is None or mistake.says not in outcome.diagnosis:
                fed.failures.append(f"{question.id} seed {seed}: {mistake.id}: diagnosis "
                                    f"{outcome.diagnosis!r} does not say what the learner did")
    return fed


def allowed_coincidences(question: Question, draws: int) -> int:
    """The validator's rule: at most 2% of the points tried, none without parameters."""
    return int(RARE_COINCIDENCE * max(draws, CHECK_DRAWS)) if question.parameterised else 0
