"""Read what a learner typed and grade it.

Numbers are read the way people type them (`2,530`, `1.2k`, `$1,125`, `16.7%`, `320 KiB`); a
compatible unit is converted to the question's unit, an incompatible one or unreadable text is
re-asked and never graded. Graded feedback shows the exact answer and the accepted range, names
the mistake a wrong number matches (a numeric question's `[[question.mistake]]`, an MCQ
distractor's `why`), and notices the classic slips: off by a power of ten, or by 1024/1000.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from questions.model import LETTERS, Instance, Question, Tolerance
from questions.units import (
    COUNTED_UNITS,
    NUMBER,
    Unit,
    case_alternatives,
    compatible,
    convert,
    family,
    format_quantity,
    format_range,
    lookup_unit,
    price_unit,
)

_NUMBER = re.compile(
    r"""^(?P<sign>[-+]?)\s*(?P<cur>\$|US\$|USD|usd|)\s*(?P<sign2>[-+]?)
        (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)
        (?:[eE](?P<exp>[-+]?\d+))?
        \s*(?P<rest>.*)$""",
    re.VERBOSE,
)
MULTIPLIERS: dict[str, float] = {
    "k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "m": 1e6, "million": 1e6, "mn": 1e6,
    "B": 1e9, "bn": 1e9, "billion": 1e9, "G": 1e9, "T": 1e12, "trillion": 1e12,
}


# "5 m" / "2.5m": minutes? milliseconds? million? Only re-asked where the answer is a time.
_BARE_M = re.compile(r"^.*\d\s*m[.,;:!?]*$")
# "25.6/s", "25.6 per second": a rate whose thing is the question's own (tokens or requests)
_PER_SECOND = re.compile(r"^(?P<number>.*?\d)\s*(?:/\s*s(?:ec(?:ond)?)?|per\s+s(?:ec(?:ond)?)?)\s*"
                         r"[.,;:!?]*$", re.IGNORECASE)
_BASE_RATE = {"tokens/time": "tok/s", "requests/time": "req/s"}


class Reask(ValueError):
    """The input cannot be graded (unreadable, or a unit that does not fit); ask again."""


NEAR_MISS = 0.10  # a wrong number within 10% of the answer is told how far off it was


@dataclass(frozen=True)
class Outcome:
    """Either a re-ask (`reask`, with `message`) or a graded result: `correct`, the displays,
    `accepted` (shown with every verdict), and for a wrong answer the mistake it matches
    (`mistake_id`, `diagnosis`) and a `hint` (a units slip, or how far off a near miss was)."""

    reask: bool
    message: str = ""
    correct: bool = False
    expected_display: str = ""
    given_display: str = ""
    hint: str | None = None
    given_value: float | None = None  # numeric, in the question's unit
    expected_value: float | None = None  # numeric, in the question's unit
    chosen_index: int | None = None  # MCQ, index into the instance's shown choices
    mistake_id: str | None = None  # a numeric mistake's id, or "choice:<index in the file>"
    diagnosis: str | None = None  # "5.2 s is what you get if you ..." / the distractor's why
    accepted: str = ""  # "accepted 5.10–5.20 s" / "accepted: C"

    @property
    def graded(self) -> bool:
        return not self.reask


def parse_choice(text: str, count: int = 4) -> int:
    """`a`-`d`, `A`-`D` or `1`-`4` (with stray punctuation like `(b)` or `c.`) to an index."""
    token = text.strip().strip("()[].:").strip()
    letters = LETTERS[:count]
    if len(token) == 1 and token.upper() in letters:
        return letters.index(token.upper())
    if token.isascii() and token.isdigit() and 1 <= int(token) <= count:  # not "²" or "①"
        return int(token) - 1
    raise Reask(_choice_request(count))


def _choice_request(count: int) -> str:
    letters = LETTERS[:count]
    return (f"answer with a letter {letters[0]}-{letters[-1]} "
            f"(or {letters[0].lower()}-{letters[-1].lower()}, 1-{count})")


def parse_quantity(text: str) -> list[tuple[float, Unit | None]]:
    """The readings of `text` as (value, unit typed or None): several when a suffix is ambiguous
    ("1.5B" is 1.5 bytes or 1.5 billion). Raises Reask if there is no reading."""
    cleaned = (text.strip().replace("\u2212", "-").replace("\u00a0", " ").replace("\u202f", " ")
               .lstrip("~≈").rstrip(".,;:!?").strip())  # "42 ms." ends a sentence
    if not cleaned:
        raise Reask("type a number, e.g. 2.53, 1.2k, 320 KiB")
    found = _NUMBER.match(cleaned)
    if not found:
        if re.match(r"^[-+]?\$?\d+,\d{1,2}(\D|$)", cleaned):
            raise Reask(f"can't read {text.strip()!r}: use a point for decimals (2.53) and "
                        "commas only between thousands (2,530)")
        raise Reask(f"can't read {text.strip()!r} as a number (e.g. 2.53, 1.2k, 320 KiB)")
    number = _number(text, found)
    rest = found["rest"].strip()
    readings = _readings(number, rest, lookup_unit("$") if found["cur"] else None)
    if not readings:
        raise Reask(_unreadable(text, rest))
    return readings


def _number(text: str, found: re.Match[str]) -> float:
    """The signed number `_NUMBER` matched (its exponent applied)."""
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
    return number


def _readings(number: float, rest: str,
              currency: Unit | None) -> list[tuple[float, Unit | None]]:
    """Each way to read `rest` (a multiplier and a unit, or neither) after `number`; with a
    currency sign, only money and prices per token quantity."""
    readings: list[tuple[float, Unit | None]] = []
    for multiplier, unit_text in _splits(rest):
        unit = lookup_unit(unit_text) if unit_text else None
        if currency is not None and unit is None and unit_text:
            unit = price_unit("$" + unit_text)  # "$1.70/M", "$1.7 per 1M tokens"
        if unit_text and unit is None:
            continue
        if currency is not None:
            if unit is not None and unit.dimension == "money/tokens":
                readings.append((number * multiplier, unit))
                continue
            if unit is not None and unit.dimension != "money":
                continue
            unit = currency
        readings.append((number * multiplier, unit))
    return readings


def _unreadable(text: str, rest: str) -> str:
    """Why a number followed by `rest` has no reading, as specifically as it can be said."""
    if re.match(r"^,\d", rest):
        return (f"can't read {text.strip()!r}: use a point for decimals (2.53) and "
                "commas only between thousands (2,530)")
    if re.match(r"^\d{3}(\D|$)", rest):
        return (f"can't read {text.strip()!r}: no spaces inside a number; write "
                "1,234 or 1234")
    if re.match(r"^/\s*\d", rest):
        return (f"can't read {text.strip()!r}: type a fraction as a decimal, e.g. "
                "0.333 for 1/3")
    options = case_alternatives(rest)
    if options:
        return f"{rest.strip()!r} is ambiguous: write it as " + " or ".join(options)
    return f"can't read the unit {rest!r} in {text.strip()!r}"


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
    if target.dimension == "time" and _BARE_M.match(text.strip()):
        raise Reask(f"{text.strip()!r}: 'm' is ambiguous for a time; write min, ms or M "
                    "(million)")
    per_second = _PER_SECOND.match(text.strip())
    if per_second and target.dimension in _BASE_RATE:
        text = f"{per_second['number']} {_BASE_RATE[target.dimension]}"
    readings = parse_quantity(text)
    for value, typed in readings:
        if typed is not None and typed.dimension == "money" and \
                target.dimension == "money/tokens":
            result = value * typed.factor  # "$1.70" for a price per 1M tokens: per that
        elif typed is not None and not compatible(typed, target):
            continue
        else:
            result = value if typed is None else convert(value, typed, target)
        if not math.isfinite(result):  # "1e300T", 400 digits: never grade infinity
            raise Reask(f"{text.strip()!r} is out of range")
        return result
    typed = next(t for _, t in readings if t is not None)
    wanted = "a plain number" if target.dimension == NUMBER else f"{_dimension_words(target)}"
    accepted = "a plain number, x or %" if target.dimension == NUMBER else \
        ", ".join(family(target))
    raise Reask(f"{typed.symbol!r} can't be converted to {unit or 'a plain number'}: this answer "
                f"is {wanted}" + (f"; type it in {accepted}" if accepted else ""))


def _dimension_words(unit: Unit) -> str:
    return {
        "bytes": "a size in bytes", "time": "a time", "tokens/time": "a token rate",
        "requests/time": "a request rate", "money": "an amount of money", "flop": "a FLOP count",
        "flop/time": "a compute rate", "bytes/time": "a bandwidth", "power": "a power",
        "energy": "an energy", "flop/bytes": "an arithmetic intensity",
        "money/tokens": "a price per token quantity",
    }.get(unit.dimension, unit.dimension)


def check_answer(item: Question | Instance, text: str) -> Outcome:
    """Grade `text` against an instance (a bare Question is graded against its seed-0 draw).

    The one checker for both kinds: an MCQ takes a letter, a position or a choice's text. A case
    study (`kind = "case"`) is answered step by step: pass `instance.steps[i]`, each a numeric
    instance; handing the case itself over is a programming error (TypeError)."""
    instance = item if isinstance(item, Instance) else item.draw(0)
    question = instance.question
    if question.kind == "case":
        raise TypeError(f"{question.id} is a case study: check each step's answer with "
                        "check_answer(instance.steps[i], text)")
    if question.kind == "mcq":
        return _check_choice(instance, text)
    return _check_number(instance, text)


def _check_number(instance: Instance, text: str) -> Outcome:
    """A numeric answer: within tolerance, a named mistake, or re-asked when it cannot be
    told apart (too few digits, a non-whole count)."""
    question = instance.question
    assert instance.answer is not None and question.tolerance is not None
    try:
        given = parse_answer(text, question.unit)
    except Reask as exc:
        return Outcome(reask=True, message=str(exc))
    expected, tolerance = instance.answer, question.tolerance
    given_display = format_quantity(given, question.unit)
    if question.round is not None and not _whole(given):
        return _not_whole(instance, given, given_display)
    correct = tolerance.accepts(expected, given)
    mistake = None if correct else _matching_mistake(instance, given)
    if not correct and mistake is not None and _agrees_as_typed(text, expected, given):
        # typed to 3 or more significant figures, the value is both the answer at those digits
        # and a named mistake: the learner may have either, so ask for more digits instead of
        # diagnosing (fewer than 3 figures is too coarse to be the answer: diagnosed)
        return Outcome(reask=True, message=f"{given_display} is the answer to the digits "
                       "you typed, and also what a common mistake gives: type more digits")
    if not correct and _cent_rounded(question, text, expected, given):
        if mistake is not None:
            return Outcome(reask=True, message=f"{given_display} is the answer to the cent, "
                           "and also what a common mistake gives: type more digits")
        correct, mistake = True, None
    hint = None
    if not correct:
        hint = units_hint(expected, given, tolerance.relative_to(expected),
                          binary=_binary_powers(question.unit)) or _near_miss(question, expected,
                                                                              given)
    return Outcome(
        reask=False,
        correct=correct,
        expected_display=format_quantity(expected, question.unit),
        given_display=given_display,
        hint=hint,
        given_value=given,
        expected_value=expected,
        mistake_id=None if mistake is None else mistake[0],
        diagnosis=None if mistake is None else f"{given_display} is what you get if you "
                                               f"{mistake[1]}",
        accepted="accepted " + accepted_range(question, expected),
    )


def _not_whole(instance: Instance, given: float, given_display: str) -> Outcome:
    """A count answered with a fraction: a value a named mistake gives before rounding is that
    mistake, graded and named; anything else is re-asked (a count is a whole number)."""
    question, expected = instance.question, instance.answer
    assert expected is not None
    mistake = _matching_mistake(instance, given, rounded=False)
    if mistake is None:
        noun = f" of {question.unit}" if question.unit in COUNTED_UNITS else ""
        return Outcome(reask=True, message=f"type a whole number{noun}: "
                       f"{given_display} is not a count")
    return Outcome(
        reask=False, correct=False, expected_display=format_quantity(expected, question.unit),
        given_display=given_display, given_value=given, expected_value=expected,
        mistake_id=mistake[0],
        diagnosis=f"{given_display} is what you get if you {mistake[1]} (and a count is a "
                  f"whole number, rounded {question.round})",
        accepted="accepted " + accepted_range(question, expected))


def _typed_digits(text: str) -> tuple[int, int] | None:
    """(significant digits, decimals) of the number as typed: '0.09' is (1, 2), '10.3' (3, 1);
    None for a form whose precision is not plain (an exponent)."""
    found = _NUMBER.match(text.strip().lstrip("~≈"))
    if not found or found["exp"]:
        return None
    digits = found["num"].replace(",", "")
    whole, _, decimals = digits.partition(".")
    significant = (whole + decimals).lstrip("0") or "0"
    return len(significant), len(decimals)


def _agrees_as_typed(text: str, expected: float, given: float) -> bool:
    """Whether `given` is `expected` rounded to the significant digits the learner typed, at
    least the 3 that the bank takes as the precision people type."""
    typed = _typed_digits(text)
    if typed is None or typed[0] < 3 or given == 0:
        return False
    rounded = float(f"{expected:.{typed[0]}g}")
    return math.isclose(rounded, given, rel_tol=1e-9)


def _cent_rounded(question: Question, text: str, expected: float, given: float) -> bool:
    """Money's one precision rule: an amount typed to the cent (two decimals at most) is right
    when it is the answer rounded to the cent, unless that rounds a real amount to $0.00."""
    unit = lookup_unit(question.unit)
    typed = _typed_digits(text)
    if unit is None or unit.dimension != "money" or typed is None or typed[1] > 2:
        return False
    cents = round(expected * unit.factor, 2)
    return cents != 0 and math.isclose(given * unit.factor, cents, rel_tol=1e-9, abs_tol=1e-12)


def _whole(value: float) -> bool:
    return abs(value - round(value)) <= 1e-9 * max(1.0, abs(value))


def _matching_mistake(instance: Instance, given: float, *,
                      rounded: bool = True) -> tuple[str, str] | None:
    """(id, says) of the named mistake whose value `given` matches (within the question's
    tolerance, around the mistake's value), the closest if several; a mistake that coincides
    with the answer on this draw is never named (the answer would be accepted). `rounded`
    False matches a counted answer's mistakes before they are rounded."""
    question = instance.question
    assert question.tolerance is not None and instance.answer is not None
    tolerance: Tolerance = question.tolerance
    matches = sorted(
        ((abs(given - value), value, mistake.id, mistake.says)
         for mistake, value in instance.mistake_values(rounded=rounded)
         if not tolerance.accepts(instance.answer, value) and
         (tolerance.accepts(value, given) if rounded else _near(tolerance, value, given))),
        key=lambda match: match[0],
    )
    if not matches:
        return None
    closest = matches[0][1]  # two mistakes giving the same value on this draw are both named
    best = [m for m in matches if math.isclose(m[1], closest, rel_tol=1e-9, abs_tol=1e-12)]
    return best[0][2], " — or if you ".join(m[3] for m in best)


def _near(tolerance: Tolerance, value: float, given: float) -> bool:
    """A fractional `given` matches a counted answer's mistake before rounding (`value`, itself
    not whole): within the relative tolerance, or as typed to 3 significant figures (4.69 for
    4.6875). A count's ±0.5 is not used: it would make 0.5 "match" a mistake of 0 or 1."""
    if value == 0 or _whole(value):
        return False
    rel = max(tolerance.rel or 0.0, 0.005)
    return abs(given - value) <= rel * abs(value) + 1e-12


def accepted_range(question: Question, expected: float) -> str:
    """The answers the tolerance accepts, as the learner would type them: '5.10–5.20 s'."""
    assert question.tolerance is not None
    tolerance = question.tolerance
    slack = max(tolerance.rel * abs(expected) if tolerance.rel is not None else 0.0,
                tolerance.abs if tolerance.abs is not None else 0.0)
    lo, hi = expected - slack, expected + slack
    if question.round is not None:
        lo = math.ceil(lo - 1e-9 * max(1.0, abs(lo)))
        hi = math.floor(hi + 1e-9 * max(1.0, abs(hi)))
    shown = format_range(lo, hi, expected, question.unit, whole=question.round is not None)
    unit = lookup_unit(question.unit)
    if unit is not None and unit.dimension == "money":
        cents = round(expected * unit.factor, 2)
        if cents != 0 and not lo <= cents / unit.factor <= hi:
            shown += f", or {format_quantity(cents / unit.factor, question.unit)} to the cent"
    return shown


def _near_miss(question: Question, expected: float, given: float) -> str | None:
    """How far off a wrong number is, when it is close (within 10%): '2.3% too low'."""
    if expected == 0 or abs(given / expected - 1) > NEAR_MISS:
        return None
    direction = "too high" if given > expected else "too low"
    if question.round is not None:
        return f"off by {abs(given - expected):,.0f} ({direction})"
    off = abs(given / expected - 1) * 100
    return f"{off:.{1 if off >= 1 else 2}f}% {direction}"


def choice_label(index: int, text: str) -> str:
    """How a shown choice is displayed everywhere: 'B) 8 bytes'."""
    return f"{LETTERS[index]}) {text}"


def _check_choice(instance: Instance, text: str) -> Outcome:
    count = len(instance.choices)
    folded = " ".join(text.split()).casefold()
    matches = [i for i, c in enumerate(instance.choices) if " ".join(c.split()).casefold() ==
               folded]
    try:
        position = parse_choice(text, count)
    except Reask as exc:
        if not matches:
            return Outcome(reask=True, message=str(exc))
        position = None
    if matches and position is not None and matches[0] != position:
        # choices like "1", "2", "4", "8": typing "2" is a value *and* a position
        return Outcome(reask=True, message=(
            f"{text.strip()!r} is the text of choice {LETTERS[matches[0]]} and also the "
            f"position of choice {LETTERS[position]}: answer with the letter"))
    chosen = matches[0] if matches else position
    assert chosen is not None
    return _graded_choice(instance, chosen)


def check_choice(instance: Instance, chosen: int) -> Outcome:
    """Grade an MCQ choice picked by its shown index (a click or a key: no text to read);
    an index outside the choices is re-asked."""
    if not 0 <= chosen < len(instance.choices):
        return Outcome(reask=True, message=_choice_request(len(instance.choices)))
    return _graded_choice(instance, chosen)


def _graded_choice(instance: Instance, chosen: int) -> Outcome:
    assert instance.correct_index is not None
    right = instance.correct_index
    correct = chosen == right
    original = instance.order[chosen] if instance.order else chosen
    why = instance.question.why
    return Outcome(
        reask=False,
        correct=correct,
        expected_display=choice_label(right, instance.choices[right]),
        given_display=choice_label(chosen, instance.choices[chosen]),
        chosen_index=chosen,
        mistake_id=None if correct else f"choice:{original}",
        diagnosis=None if correct or original >= len(why) else why[original] or None,
        accepted=f"accepted: {LETTERS[right]}",
    )


def _binary_powers(unit: str) -> int:
    """How many factors of 1024/1000 a slip can put into an answer in `unit`: one per prefix
    step (KiB 1 ... GiB 3), at least 1 for bytes; 0 where the unit has no bytes in it."""
    found = lookup_unit(unit)
    if found is None or found.dimension not in ("bytes", "bytes/time"):
        return 0
    return max(1, "KMGTP".find(found.symbol[:1].upper()) + 1)


def units_hint(expected: float, given: float, rel_tolerance: float = 0.0, *,
               binary: int = 4) -> str | None:
    """'off by 1000× — check your units' when given/expected is a power of ten, or 1024/1000
    (KiB vs KB) possibly times a power of ten; None for any other miss. `binary` caps the
    power of 1024/1000 on its own (a GiB answer: 3); 0 (a unit with no bytes in it) leaves
    those readings out: a 4.9% miss on a price is a wrong answer, not a KiB/KB slip."""
    if expected == 0 or given == 0 or (expected < 0) != (given < 0):
        return None
    ratio = given / expected
    decimal_slack = max(min(rel_tolerance, 0.05), 0.002)
    binary_slack = max(min(rel_tolerance, 0.005), 0.001)  # 1.024 is only 2.4% away from 1
    for k in range(-12, 13):
        for n in range(-4, 5) if binary else (0,):
            if k == 0 and abs(n) > binary:
                continue
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

