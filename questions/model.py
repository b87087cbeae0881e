"""Typed questions and topics, and the seeded draw that turns a question into a shown instance.

A draw is a pure function of (question, seed): the scheduler stores the seed with each review so
the same numbers, wording and choice order can be shown again (undo, history).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from questions.formula import Formula, FormulaError
from questions.render import RenderError, render

Value = int | float | str
Kind = Literal["mcq", "numeric", "case"]
Rounding = Literal["up", "down", "nearest"]
LETTERS = "ABCD"
ROUNDINGS: tuple[Rounding, ...] = ("up", "down", "nearest")


REDRAWS = 20  # sub-seeds tried when a draw hits a formula's rare failing point


class DrawError(ValueError):
    """A draw that cannot be completed (a formula or placeholder failed)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Topic:
    id: str
    title: str
    note: str  # Markdown concept note
    source: Path
    line: int = 1


@dataclass(frozen=True)
class LabLink:
    exercise: str
    level: int


@dataclass(frozen=True)
class Tolerance:
    """Relative and/or absolute; an answer is accepted when within either."""

    rel: float | None = None
    abs: float | None = None

    def accepts(self, expected: float, given: float) -> bool:
        diff = abs(given - expected)
        slack = 1e-9 * max(1.0, abs(expected))  # float noise, e.g. 0.1 + 0.2
        if self.rel is not None and diff <= self.rel * abs(expected) + slack:
            return True
        return self.abs is not None and diff <= self.abs + slack

    def relative_to(self, expected: float) -> float:
        """The tolerance as a fraction of the expected value (for the units hint)."""
        candidates = []
        if self.rel is not None:
            candidates.append(self.rel)
        if self.abs is not None and expected != 0:
            candidates.append(self.abs / abs(expected))
        return max(candidates, default=0.0)

    def describe(self) -> str:
        parts = []
        if self.rel is not None:
            parts.append(f"±{self.rel:.2%}".replace(".00%", "%"))
        if self.abs is not None:
            parts.append(f"±{self.abs:g}")
        return " or ".join(parts)


@dataclass(frozen=True)
class Mistake:
    """A named wrong path to a numeric answer: `formula` is what a learner who `says` gets."""

    id: str  # kebab-case, unique within its question
    formula: Formula  # over the answer's names, in the answer's unit
    says: str  # one line, past tense: "added a full TPOT for the first token as well as TTFT"


def round_count(value: float, how: Rounding) -> float:
    """A counted answer as a whole number, rounded `how`; float noise (95.99999999 from 0.1 +
    0.2-style sums) is not allowed to push a ceil/floor across a whole number."""
    nearest = math.floor(value + 0.5)
    if abs(value - nearest) <= 1e-9 * max(1.0, abs(value)):
        return float(nearest)
    if how == "up":
        return float(math.ceil(value))
    if how == "down":
        return float(math.floor(value))
    return float(nearest)


@dataclass(frozen=True)
class RoundedFormula(Formula):
    """An earlier case step's answer used by later steps: its value as counted (`round`)."""

    how: Rounding = "nearest"

    def evaluate(self, values: Mapping[str, object]) -> float:
        return round_count(super().evaluate(values), self.how)


@dataclass(frozen=True)
class Step:
    """One step of a case study (`kind = "case"`): its own prompt, unit, tolerance, answer and
    mistakes. `question` is the step as a numeric question (unit, tolerance, answer, mistakes,
    round; its `derived` also holds the earlier steps' answers under their names), so every step
    is graded by the one checker, `questions.answers.check_answer`. `name` is how later steps and
    the case's explanation refer to this step's correct value."""

    name: str
    prompt: str  # this step's own question (template)
    explanation: str  # why this step's answer is what it is (template)
    question: Question


@dataclass(frozen=True)
class Param:
    """A drawn value: one of `choices`, or a value in [min, max] (on a `step` grid if given)."""

    name: str
    choices: tuple[int | float, ...] = ()
    min: float | None = None
    max: float | None = None
    step: float | None = None
    integer: bool = False

    def draw(self, rng: random.Random) -> int | float:
        if self.choices:
            return rng.choice(self.choices)
        assert self.min is not None and self.max is not None
        if self.step is not None:
            count = int((self.max - self.min) / self.step + 1e-9)
            return self._grid(rng.randint(0, count))
        if self.integer:
            return rng.randint(int(self.min), int(self.max))
        return rng.uniform(self.min, self.max)

    def extremes(self) -> tuple[int | float, int | float]:
        if self.choices:
            return min(self.choices), max(self.choices)
        assert self.min is not None and self.max is not None
        if self.step is not None:
            return self._grid(0), self._grid(int((self.max - self.min) / self.step + 1e-9))
        if self.integer:
            return int(self.min), int(self.max)
        return self.min, self.max

    def _grid(self, k: int) -> int | float:
        assert self.min is not None and self.step is not None
        value = self.min + k * self.step
        return round(value) if self.integer else round(value, 10)


@dataclass(frozen=True)
class Label:
    """Text shown for a choice value, e.g. dtype_name from bytes: 1 -> "FP8"."""

    name: str
    source: str
    mapping: Mapping[str, str]

    def text_for(self, value: Value) -> str | None:
        for key in _label_keys(value):
            if key in self.mapping:
                return self.mapping[key]
        return None


def _label_keys(value: Value) -> list[str]:
    keys = [str(value)]
    if isinstance(value, float) and value.is_integer():
        keys.append(str(int(value)))
    return keys


@dataclass(frozen=True, eq=False)
class Instance:
    """One drawn, rendered occurrence of a question: what the learner sees and is graded on."""

    question: Question
    seed: int
    values: Mapping[str, Value]  # params + case values + derived + labels (+ `answer`)
    prompt: str
    explanation: str
    answer: float | None  # numeric questions
    choices: tuple[str, ...] = ()  # MCQ, in the shown (shuffled) order
    correct_index: int | None = None  # MCQ, index into the shown `choices`
    order: tuple[int, ...] = ()  # MCQ: shown position -> index in the file's `choices`
    steps: tuple[Instance, ...] = ()  # case: one numeric instance per step, in order

    @property
    def is_case(self) -> bool:
        return self.question.kind == "case"

    def _key(self) -> tuple[object, ...]:
        return (self.question.id, self.seed, tuple(self.values.items()), self.prompt,
                self.explanation, self.answer, self.choices, self.correct_index,
                tuple(step._key() for step in self.steps))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instance) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.question.id, self.seed))

    @property
    def correct_letter(self) -> str | None:
        return None if self.correct_index is None else LETTERS[self.correct_index]

    def mistake_values(self, *, rounded: bool = True) -> list[tuple[Mistake, float]]:
        """Each named mistake's value on this draw (rounded like the answer for counted
        things, unless `rounded` is False: what a learner who stops before rounding types);
        a mistake whose formula fails at this point is left out."""
        found = []
        for mistake in self.question.mistakes:
            try:
                value = mistake.formula.evaluate(self.values)
            except FormulaError:
                continue
            if rounded and self.question.round is not None:
                value = round_count(value, self.question.round)
            found.append((mistake, value))
        return found


@dataclass(frozen=True, eq=False)  # identity equality and hashing: usable in sets and dicts
class Question:
    id: str
    topic: str
    kind: Kind
    prompt: str
    explanation: str
    lab: LabLink | None  # None: no lab level exercises this concept
    difficulty: int
    source: Path
    line: int = 1
    sim: str | None = None
    related: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    unit: str = ""
    tolerance: Tolerance | None = None
    answer: Formula | None = None  # numeric: a formula (a literal number compiles to one too)
    choices: tuple[str, ...] = ()
    correct: int | None = None  # MCQ: index into `choices` as written
    params: Mapping[str, Param] = field(default_factory=dict)
    cases: tuple[Mapping[str, Value], ...] = ()
    derived: Mapping[str, Formula] = field(default_factory=dict)
    labels: Mapping[str, Label] = field(default_factory=dict)
    mistakes: tuple[Mistake, ...] = ()  # numeric
    why: tuple[str, ...] = ()  # MCQ: parallel to `choices`; the correct one's entry is ""
    round: Rounding | None = None  # numeric counted things: the answer is a whole number
    steps: tuple[Step, ...] = ()  # case: 3-5 linked numeric steps

    @property
    def parameterised(self) -> bool:
        return bool(self.params or self.cases)

    def draw(self, seed: int, *, redraws: int = REDRAWS) -> Instance:
        """The instance for `seed`: fresh parameter values, rendered text, shuffled choices.

        A draw whose formula fails at a rare point the validator's sampled draws missed
        (100 / (x - 537) at x = 537) is redrawn from sub-seeds of `seed`, so a review never
        crashes and the stored seed still shows the same instance. The validator passes
        `redraws=0` to see every failure."""
        order = tuple(random.Random(f"{self.id}/{seed}/choices").sample(
            range(len(self.choices)), len(self.choices)))
        for attempt in range(redraws + 1):
            try:
                return self.instance(self.draw_values(seed, attempt), seed=seed, order=order)
            except DrawError:
                if attempt == redraws:
                    raise
        raise AssertionError("unreachable")

    def draw_values(self, seed: int, attempt: int = 0) -> dict[str, Value]:
        """The parameter (and case) values for `seed` (and a redraw `attempt`), before
        anything is derived."""
        rng = random.Random(f"{self.id}/{seed}" + (f"/redraw{attempt}" if attempt else ""))
        values: dict[str, Value] = {}
        if self.cases:
            values.update(self.cases[rng.randrange(len(self.cases))])
        for name, param in self.params.items():
            values[name] = param.draw(rng)
        return values

    def answer_with(self, values: Mapping[str, Value], overrides: Mapping[str, float]) -> float:
        """The numeric answer recomputed with some values replaced, e.g. by the rounded numbers
        the prompt displays; raises FormulaError like any evaluation."""
        assert self.answer is not None
        drawn = set(self.params) | {k for case in self.cases for k in case}
        env: dict[str, Value] = {k: v for k, v in values.items() if k in drawn}
        env.update({k: v for k, v in overrides.items() if k in drawn})
        for name, formula in self.derived.items():
            env[name] = overrides[name] if name in overrides else formula.evaluate(env)
        answer = self.answer.evaluate(env)
        return answer if self.round is None else round_count(answer, self.round)

    def instance(
        self, drawn: Mapping[str, Value], *, seed: int = 0, order: tuple[int, ...] | None = None
    ) -> Instance:
        """Render an instance from given parameter values (the validator uses it for extremes)."""
        values: dict[str, Value] = dict(drawn)
        where = "params"
        try:
            for name, formula in self.derived.items():
                where = f"derived.{name}"
                values[name] = _tidy(formula.evaluate(values))
            for name, label in self.labels.items():
                where = f"labels.{name}"
                text = label.text_for(values.get(label.source, ""))
                if text is None:
                    source_value = values.get(label.source)
                    raise RenderError(f"no text for {label.source} = {source_value!r}")
                values[name] = text
            answer: float | None = None
            steps: list[Instance] = []
            for i, step in enumerate(self.steps):
                where = f"step[{i}]"
                steps.append(self._step_instance(step, values, seed))
            if self.kind == "numeric":
                assert self.answer is not None
                where = "answer"
                answer = self.answer.evaluate(values)
                if self.round is not None:
                    answer = round_count(answer, self.round)
                values["answer"] = _tidy(answer)
            shown = order if order is not None else tuple(range(len(self.choices)))
            where = "choices"
            choices = tuple(render(self.choices[i], values) for i in shown)
            correct_index = None
            if self.kind == "mcq":
                assert self.correct is not None
                correct_index = shown.index(self.correct)
                values["answer"] = choices[correct_index]
            where = "prompt"
            prompt = render(self.prompt, values)
            where = "explanation"
            explanation = render(self.explanation, values)
        except (FormulaError, RenderError) as exc:
            raise DrawError(where, str(exc)) from None
        return Instance(
            question=self, seed=seed, values=values, prompt=prompt, explanation=explanation,
            answer=answer, choices=choices, correct_index=correct_index,
            order=shown if self.kind == "mcq" else (), steps=tuple(steps),
        )

    @staticmethod
    def _step_instance(step: Step, values: dict[str, Value], seed: int) -> Instance:
        """Evaluate one case step on the case's values, record its (counted) value under the
        step's name for the steps after it, and render its own prompt and explanation."""
        question = step.question
        assert question.answer is not None
        answer = question.answer.evaluate(values)
        if question.round is not None:
            answer = round_count(answer, question.round)
        prompt = render(step.prompt, values)  # earlier steps only: the loader checks the names
        values[step.name] = _tidy(answer)
        own = {**values, "answer": _tidy(answer)}
        explanation = render(step.explanation, own)
        return Instance(question=question, seed=seed, values=own, prompt=prompt,
                        explanation=explanation, answer=answer)


def _tidy(value: float) -> int | float:
    """Whole numbers from formulas read as ints in text ({n} shows 32, not 32.0)."""
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
