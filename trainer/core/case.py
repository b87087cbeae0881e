"""A case study in a session, headless: one scenario answered step by step.

Each step is graded by the one checker (`check_answer(instance.steps[k], text)`); an answer it
cannot read is re-asked and grades nothing. After a step's verdict its correct value is revealed
(`questions.cases.revealed`) and the learner moves on; when every step is done the card's SM-2
grade is suggested from the steps right at their first graded answer
(`questions.cases.suggested_grade`). The session records the card once, with that grade or the
learner's own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from questions.model import Instance


@dataclass(frozen=True)
class StepVerdict:
    """The verdict on one step's answer, with the step's correct value revealed."""

    index: int  # 0-based step number
    name: str  # the step's name in the case (how mistakes are recorded: "<name>:<mistake id>")
    correct: bool
    expected: str
    given: str
    revealed: str  # the correct value as shown before the next step
    explanation: str
    hint: str = ""
    diagnosis: str = ""
    accepted: str = ""
    mistake_id: str | None = None  # the step's named mistake, without the step name
    overridden: bool = False  # the learner mistyped and counted this step right


class CaseProgress:
    """Where a learner stands in one case card: the step asked, and the verdicts so far."""

    def __init__(self, instance: Instance) -> None:
        if not instance.is_case or not instance.steps:
            raise ValueError(f"{instance.question.id} is not a case study with steps")
        self.instance = instance
        self.index = 0  # the step asked (== len(steps) once every step is done)
        self.verdicts: list[StepVerdict] = []

    @property
    def total(self) -> int:
        return len(self.instance.steps)

    @property
    def finished(self) -> bool:
        return self.index >= self.total

    @property
    def step(self) -> Instance | None:
        """The step being asked or showing its verdict; None once the case is done."""
        return None if self.finished else self.instance.steps[self.index]

    @property
    def verdict(self) -> StepVerdict | None:
        """The current step's verdict, once its answer is graded (before `next`)."""
        return self.verdicts[self.index] if len(self.verdicts) > self.index else None

    @property
    def can_override(self) -> bool:
        verdict = self.verdict
        return verdict is not None and not verdict.correct

    @property
    def rights(self) -> list[bool]:
        return [v.correct for v in self.verdicts]

    def submit(self, text: str) -> StepVerdict:
        """Grade the current step's answer. Raises `questions.answers.Reask` for input the
        checker cannot read (nothing is graded); a step already graded keeps its verdict."""
        from questions.answers import Reask, check_answer
        from questions.cases import revealed

        step = self.step
        if step is None:
            raise RuntimeError("every step of this case is answered")
        if self.verdict is not None:
            return self.verdict
        outcome = check_answer(step, text)
        if outcome.reask:
            raise Reask(outcome.message or "That is not an answer I can read.")
        verdict = StepVerdict(
            index=self.index,
            name=self.instance.question.steps[self.index].name,
            correct=outcome.correct,
            expected=outcome.expected_display,
            given=outcome.given_display or text.strip(),
            revealed=revealed(step),
            explanation=step.explanation,
            hint=outcome.hint or "",
            diagnosis=outcome.diagnosis or "",
            accepted=outcome.accepted,
            mistake_id=outcome.mistake_id,
        )
        self.verdicts.append(verdict)
        return verdict

    def override(self) -> StepVerdict:
        """'I mistyped': count the current step's wrong verdict right (its mistake is dropped)."""
        verdict = self.verdict
        if verdict is None or verdict.correct:
            raise RuntimeError("only a wrong step verdict that is still showing can be overridden")
        self.verdicts[self.index] = replace(verdict, correct=True, overridden=True,
                                            mistake_id=None)
        return self.verdicts[self.index]

    def next(self) -> bool:
        """Move past the current step's verdict; True when that was the last step."""
        if self.verdict is None:
            raise RuntimeError("answer this step before moving on")
        self.index += 1
        return self.finished

    def suggested_grade(self) -> int:
        from questions.cases import suggested_grade

        return suggested_grade(self.rights)

    @property
    def mistake_id(self) -> str | None:
        """The first wrong step's named mistake, as `<step name>:<mistake id>` (ids are unique
        only within a step); None when no wrong step matched a named mistake."""
        for verdict in self.verdicts:
            if not verdict.correct:
                return f"{verdict.name}:{verdict.mistake_id}" if verdict.mistake_id else None
        return None
