"""Case studies (`kind = "case"`): one scenario, 3-5 linked numeric steps, graded step by step.

A client drives a case like this::

    inst = question.draw(seed)          # inst.prompt is the scenario
    right = []
    for step in inst.steps:             # each a numeric Instance: prompt, unit, answer
        outcome = check_answer(step, typed)          # re-ask until outcome.graded
        right.append(outcome.correct)
        reveal(step)                    # show the correct value before the next step
    grade = suggested_grade(right)      # the SM-2 grade offered for the card

Later steps use the earlier steps' *correct* values (revealed before they are asked), so one slip
costs one step, not the whole chain.
"""

from __future__ import annotations

from collections.abc import Sequence

from questions.model import Instance
from questions.units import format_quantity

# Steps wrong -> suggested SM-2 grade (0-5 scale, 3 and above is a pass): every step right is a
# solid recall (4; the learner may raise it to 5), one slip still passes with a lower ease (3),
# two wrong is a lapse (2), and more than two is a near-blank (1).
GRADE_BY_WRONG = (4, 3, 2)
GRADE_OTHERWISE = 1


def suggested_grade(right: Sequence[bool]) -> int:
    """The SM-2 grade for a case from whether each step's first graded answer was right."""
    if not right:
        raise ValueError("a case has at least one step")
    wrong = sum(not r for r in right)
    return GRADE_BY_WRONG[wrong] if wrong < len(GRADE_BY_WRONG) else GRADE_OTHERWISE


def revealed(step: Instance) -> str:
    """A step's correct value as shown before the next step ("140.5 GiB", "52 seats")."""
    assert step.answer is not None
    return format_quantity(step.answer, step.question.unit)
