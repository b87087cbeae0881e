"""Read what a learner typed and grade it.

Numbers are read the way people type them (`2,530`, `1.2k`, `$1,125`, `16.7%`, `320 KiB`); a
compatible unit is converted to the question's unit, an incompatible one or unreadable text is
re-asked and never graded. Graded feedback shows the exact answer and notices the classic slips:
off by a power of ten, or by 1024/1000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from questions.model import LETTERS, Instance, Question
from questions.units import NUMBER, Unit, compatible, convert, format_quantity, lookup_unit

_NUMBER = re.compile(
    r"""^(?P<sign>[-+]?)\s*(?P<cur>\$?)\s*(?P<sign2>[-+]?)
        (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)
        (?:[eE](?P<exp>[-+]?\d+))?
        \s*(?P<rest>.*)$""",
    re.VERBOSE,
)
MULTIPLIERS: dict[str, float] = {
    "k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "m": 1e6, "million": 1e6, "mn": 1e6,
    "B": 1e9, "bn": 1e9, "billion": 1e9, "G": 1e9, "T": 1e12, "trillion": 1e12,
}


class Reask(ValueError):
    """The input cannot be graded (unreadable, or a unit that does not fit); ask again."""


@dataclass(frozen=True)
class Outcome:
    """Either a re-ask (`reask`, with `message`) or a graded result (`correct`, displays, hint)."""

    reask: bool
    message: str = ""
    correct: bool = False
    expected_display: str = ""
    given_display: str = ""
    hint: str | None = None
    given_value: float | None = None  # numeric, in the question's unit
    expected_value: float | None = None  # numeric, in the question's unit
    chosen_index: int | None = None  # MCQ, index into the instance's shown choices

    @property
    def graded(self) -> bool:
        return not self.reask


def parse_choice(text: str, count: int = 4) -> int:
    """`a`-`d`, `A`-`D` or `1`-`4` (with stray punctuation like `(b)` or `c.`) to an index."""
    token = text.strip().strip("()[].:").strip()
    letters = LETTERS[:count]
    if len(token) == 1 and token.upper() in letters:
        return letters.index(token.upper())
    if token.isdigit() and 1 <= int(token) <= count:
        return int(token) - 1
    raise Reask(f"answer with a letter {letters[0]}-{letters[-1]} "
                f"(or {letters[0].lower()}-{letters[-1].lower()}, 1-{count})")


def parse_quantity(text: str) -> list[tuple[float, Unit | None]]:
    """The readings of `text` as (value, unit typed or None): several when a suffix is ambiguous
    ("1.5B" is 1.5 bytes or 1.5 billion). Raises Reask if there is no reading."""
    cleaned = (text.strip().replace("\u2212", "-").replace("\u00a0", " ").replace("\u202f", " ")
               .lstrip("~≈").strip())
    if not cleaned:
        raise Reask("type a number, e.g. 2.53, 1.2k, 320 KiB")
    found = _NUMBER.match(cleaned)
    if not found:
        if re.match(r"^[-+]?\$?\d+,\d{1,2}(\D|$)", cleaned):
            raise Reask(f"can't read {text.strip()!r}: use a point for decimals (2.53) and "
                        "commas only between thousands (2,530)")
        raise Reask(f"can't read {text.strip()!r} as a number (e.g. 2.53, 1.2k, 320 KiB)")
    if found["sign"] and found["sign2"]:
        raise Reask(f"can't read {text.strip()!r}: two signs")
    number = float(found["num"].replace(",", ""))
    if found["exp"]:
        exponent = int(found["exp"])
        if abs(exponent) > 300:
            raise Reask(f"{text.strip()!r} is out of range")
        number *= 10.0**exponent
    if "-" in (found["sign"], found["sign2"]):
        number = -number
    rest = found["rest"].strip()
    currency = lookup_unit("$") if found["cur"] else None
    readings: list[tuple[float, Unit | None]] = []
    for multiplier, unit_text in _splits(rest):
        unit = lookup_unit(unit_text) if unit_text else None
        if unit_text and unit is None:
            continue
        if currency is not None:
            if unit is not None and unit.dimension != "money":
                continue
            unit = currency
        readings.append((number * multiplier, unit))
    if not readings:
        if re.match(r"^,\d", rest):
            raise Reask(f"can't read {text.strip()!r}: use a point for decimals (2.53) and "
                        "commas only between thousands (2,530)")
        raise Reask(f"can't read the unit {rest!r} in {text.strip()!r}")
    return readings


def _splits(rest: str) -> list[tuple[float, str]]:
    """(multiplier, unit text) ways to read what follows the number: unit alone first."""
    options = [(1.0, rest)]
    for word, factor in sorted(MULTIPLIERS.items(), key=lambda kv: -len(kv[0])):
        if rest.startswith(word):
            tail = rest[len(word):]
            short = word in ("k", "K", "M", "B")
            if short or not tail or tail[0] in " $/" or not tail[0].isalpha():
                options.append((factor, tail.strip()))
    return options


def parse_answer(text: str, unit: str = "") -> float:
    """The value of `text` in `unit` (a bare number is taken to be in `unit` already).

    Raises Reask when the text is unreadable or its unit cannot be converted to `unit`."""
    target = lookup_unit(unit)
    if target is None:
        raise ValueError(f"unknown question unit {unit!r}")
    readings = parse_quantity(text)
    for value, typed in readings:
        if typed is None:
            return value
        if compatible(typed, target):
            return convert(value, typed, target)
    typed = next(t for _, t in readings if t is not None)
    wanted = "a plain number" if target.dimension == NUMBER else f"{_dimension_words(target)}"
    raise Reask(f"{typed.symbol!r} can't be converted to {unit or 'a plain number'}: this answer "
                f"is {wanted}" + (f" (e.g. in {unit})" if unit else ""))


def _dimension_words(unit: Unit) -> str:
    return {
        "bytes": "a size in bytes", "time": "a time", "tokens/time": "a token rate",
        "requests/time": "a request rate", "money": "an amount of money", "flop": "a FLOP count",
        "flop/time": "a compute rate", "bytes/time": "a bandwidth", "power": "a power",
        "energy": "an energy", "flop/bytes": "an arithmetic intensity",
    }.get(unit.dimension, unit.dimension)


def check_answer(item: Question | Instance, text: str) -> Outcome:
    """Grade `text` against an instance (a bare Question is graded against its seed-0 draw)."""
    instance = item if isinstance(item, Instance) else item.draw(0)
    question = instance.question
    if question.kind == "mcq":
        return _check_choice(instance, text)
    assert instance.answer is not None and question.tolerance is not None
    try:
        given = parse_answer(text, question.unit)
    except Reask as exc:
        return Outcome(reask=True, message=str(exc))
    expected = instance.answer
    correct = question.tolerance.accepts(expected, given)
    return Outcome(
        reask=False,
        correct=correct,
        expected_display=format_quantity(expected, question.unit),
        given_display=format_quantity(given, question.unit),
        hint=None if correct else units_hint(expected, given, question.tolerance.relative_to(
            expected)),
        given_value=given,
        expected_value=expected,
    )


def _check_choice(instance: Instance, text: str) -> Outcome:
    count = len(instance.choices)
    folded = " ".join(text.split()).casefold()
    matches = [i for i, c in enumerate(instance.choices) if " ".join(c.split()).casefold() ==
               folded]
    try:
        chosen = matches[0] if matches else parse_choice(text, count)
    except Reask as exc:
        return Outcome(reask=True, message=str(exc))
    assert instance.correct_index is not None
    correct_text = instance.choices[instance.correct_index]
    return Outcome(
        reask=False,
        correct=chosen == instance.correct_index,
        expected_display=f"{LETTERS[instance.correct_index]}) {correct_text}",
        given_display=f"{LETTERS[chosen]}) {instance.choices[chosen]}",
        chosen_index=chosen,
    )


def units_hint(expected: float, given: float, rel_tolerance: float = 0.0) -> str | None:
    """'off by 1000× — check your units' when given/expected is a power of ten, or 1024/1000
    (KiB vs KB) possibly times a power of ten; None for any other miss."""
    if expected == 0 or given == 0 or (expected < 0) != (given < 0):
        return None
    ratio = given / expected
    decimal_slack = max(min(rel_tolerance, 0.05), 0.002)
    binary_slack = max(min(rel_tolerance, 0.005), 0.001)  # 1.024 is only 2.4% away from 1
    for k in range(-12, 13):
        for n in range(-4, 5):
            if k == 0 and n == 0:
                continue
            target = 10.0**k * 1.024**n
            slack = decimal_slack if n == 0 else binary_slack
            if abs(ratio / target - 1) <= slack:
                return _hint_text(k, n, ratio)
    return None


def _hint_text(k: int, n: int, ratio: float) -> str:
    direction = "too big" if ratio > 1 else "too small"
    if n == 0:
        factor = f"{10 ** abs(k):,}×"
        return f"off by {factor} ({direction}) — check your units"
    power = abs(n)
    binary = "1024/1000" if power == 1 else f"(1024/1000)^{power}"
    extra = f" and {10 ** abs(k):,}×" if k else ""
    return (f"off by {binary}{extra} ({direction}) — check your units "
            "(KiB = 1024 B vs KB = 1000 B; GiB = 2^30 B vs GB = 10^9 B)")

