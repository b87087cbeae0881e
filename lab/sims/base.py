"""The common shape of every sim: typed dials, outputs, formula lines and pass/fail checks.

A sim is a pure function from dials to a `SimResult`. The same object drives the CLI, the TUI
screens and the tests, so everything a screen needs (labels, units, ranges, help, presets) lives
on the spec, and every number a learner sees is explained by a formula line with the current
numbers substituted.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Value = int | float | str
Kind = Literal["int", "float", "choice"]


class SimInputError(ValueError):
    """A dial got a name or value the sim cannot take; the message says which one and why."""


@dataclass(frozen=True)
class InputSpec:
    """One dial: what it is called, its unit, default, allowed range or choices, and help.

    `percent` marks a fraction (0..1) that is shown as a percentage; "30%" is accepted for it.
    `binary_k` marks a context length: `8k` is 8,192 tokens, as model cards write it ("128k
    context" = 131,072), and `note` says so.
    """

    name: str
    label: str
    unit: str
    default: Value
    kind: Kind = "float"
    min: float | None = None
    max: float | None = None
    step: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""
    percent: bool = False
    binary_k: bool = False

    def parse(self, text: str) -> Value:
        """Turn command-line text into a checked value (raises SimInputError)."""
        raw = text.strip()
        if self.kind == "choice":
            return self.validate(raw.lower())
        kilo = self._binary_kilo(raw)
        if kilo is not None:
            if self.kind == "int" and not kilo.is_integer():
                raise SimInputError(f"{self.name}: '{text}' is not a whole number of tokens")
            return self.validate(int(kilo) if self.kind == "int" else kilo)
        cleaned = raw.replace("_", "")
        if cleaned.endswith("%"):
            if not self.percent:
                raise SimInputError(
                    f"{self.name}: '{text}' has a '%' but this dial is in {self.unit}"
                )
            number = self._read(cleaned[:-1], text, "") * 0.01
        else:
            number = self._read(cleaned, text, self._answer_unit())
        if self.kind == "int":
            if not number.is_integer():
                raise SimInputError(f"{self.name}: '{text}' is not an integer")
            return self.validate(int(number))
        return self.validate(number)

    def note(self, text: str) -> str | None:
        """How a dial read text a reader might take otherwise ("8k" → 8,192 tokens), else None."""
        kilo = self._binary_kilo(text.strip())
        if kilo is None:
            return None
        return (f"{self.name}: {text.strip()} read as {kilo:,.0f} {self.unit} (model-card usage: "
                f"1k = 1,024); type {kilo / 1.024:,.0f} for a decimal {text.strip()}")

    def _binary_kilo(self, raw: str) -> float | None:
        found = _KILO.match(raw.replace("_", "")) if self.binary_k else None
        return None if found is None else float(found[1].replace(",", "")) * 1024

    def _answer_unit(self) -> str:
        """The dial's unit as the answer parser knows it ("GiB/GPU" → "GiB"), else plain."""
        from questions.units import lookup_unit

        for candidate in (self.unit, self.unit.split("/")[0]):
            if candidate and lookup_unit(candidate) is not None:
                return candidate
        return ""

    def _read(self, cleaned: str, text: str, unit: str) -> float:
        """Numbers are read the way answers are: `8k`, `1,024`, `2.5e3`, `80 GB` for a GiB dial."""
        from questions.answers import Reask, parse_answer

        try:
            return float(cleaned.replace(",", ""))
        except ValueError:
            pass
        try:
            return parse_answer(cleaned, unit)
        except Reask as exc:
            if str(exc).startswith("can't read"):
                kind = "an integer" if self.kind == "int" else "a number"
                raise SimInputError(f"{self.name}: '{text}' is not {kind}") from None
            raise SimInputError(f"{self.name}: '{text}': {exc}") from None

    def validate(self, value: object) -> Value:
        """Check type and range of a value given in code; ints are accepted for float dials."""
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise SimInputError(
                    f"{self.name}: {value!r} is not one of {', '.join(self.choices)}"
                )
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SimInputError(f"{self.name}: {value!r} is not a number")
        if self.kind == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise SimInputError(f"{self.name}: {value!r} is not an integer")
                value = int(value)
        else:
            value = float(value)
        if not math.isfinite(value):
            raise SimInputError(f"{self.name}: {value!r} is not a finite number")
        if self.min is not None and value < self.min:
            raise SimInputError(
                f"{self.name} must be ≥ {_plain(self.min)} {self.unit}, got {value}"
            )
        if self.max is not None and value > self.max:
            raise SimInputError(
                f"{self.name} must be ≤ {_plain(self.max)} {self.unit}, got {value}"
            )
        return value

    def describe_range(self) -> str:
        """'one of a, b' or 'min..max' for help texts."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        show = (lambda x: f"{_plain(round(x * 100, 6))}%") if self.percent else _plain
        lo = "" if self.min is None else show(self.min)
        hi = "" if self.max is None else show(self.max)
        return f"{lo}..{hi}"


_KILO = re.compile(r"^(\d+(?:\.\d+)?)\s*[kK]\s*(?:tokens?|tok)?$")


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Preset:
    """A named set of dials; a story preset names the check it fails and the dial that fixes it."""

    name: str
    label: str
    description: str
    values: Mapping[str, Value]
    about_check: str | None = None
    fix: Mapping[str, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class Output:
    """One computed figure. `value` is None where the figure does not exist (e.g. 'never')."""

    name: str
    label: str
    value: float | None
    unit: str
    text: str = ""


@dataclass(frozen=True)
class Check:
    """A policy check. `margin` is in the checked quantity's unit: ≥ 0 passes, < 0 is the gap."""

    name: str
    description: str
    passed: bool
    margin: float
    margin_text: str


@dataclass(frozen=True)
class SimResult:
    sim: str
    inputs: dict[str, Value]
    outputs: list[Output]
    formulas: list[str]
    checks: list[Check]

    def output(self, name: str) -> Output:
        for out in self.outputs:
            if out.name == name:
                return out
        raise KeyError(name)

    def value(self, name: str) -> float:
        """The numeric value of an output (KeyError if missing, ValueError if it has none)."""
        value = self.output(name).value
        if value is None:
            raise ValueError(f"output {name} has no value ({self.output(name).text})")
        return value

    def check(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (no NaN/inf: absent figures are null)."""
        return {
            "sim": self.sim,
            "inputs": dict(self.inputs),
            "outputs": [asdict(o) for o in self.outputs],
            "formulas": list(self.formulas),
            "checks": [asdict(c) for c in self.checks],
            "all_passed": self.all_passed,
        }


Fmt = Callable[[float], str]


def at_least(name: str, description: str, value: float, target: float, fmt: Fmt,
             gap_fmt: Fmt | None = None) -> Check:
    """Check value ≥ target; margin = value − target (in the value's unit)."""
    margin = value - target
    gap = (gap_fmt or fmt)(abs(margin))
    word = "above" if margin >= 0 else "short of"
    return Check(name, description, margin >= 0, margin,
                 f"{fmt(value)}: {gap} {word} the target of {fmt(target)}")


def at_most(name: str, description: str, value: float, limit: float, fmt: Fmt,
            gap_fmt: Fmt | None = None) -> Check:
    """Check value ≤ limit; margin = limit − value (in the value's unit)."""
    margin = limit - value
    gap = (gap_fmt or fmt)(abs(margin))
    word = "under" if margin >= 0 else "over"
    return Check(name, description, margin >= 0, margin,
                 f"{fmt(value)}: {gap} {word} the limit of {fmt(limit)}")


def unit(label: str, sig: int = 4) -> Fmt:
    """A formatter 'x label', e.g. unit('seats')(13) == '13 seats'."""
    return lambda x: f"{num(x, sig)} {label}"


def points(fraction: float) -> str:
    """A difference of two shares, in percentage points."""
    return f"{num(fraction * 100)} points"


def num(x: float, sig: int = 4) -> str:
    """A number with about `sig` significant digits and thousands separators: 4.794, 13,417."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, sig - 1 - magnitude)
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def money(x: float) -> str:
    """Dollars: $14,088.06 for bills, $0.0969 for per-token prices, −$687.00 when negative."""
    sign = "−" if x < 0 else ""
    if abs(x) >= 100:
        return f"{sign}${abs(x):,.2f}"
    return f"{sign}${num(abs(x))}"


def pct(fraction: float) -> str:
    return num(fraction * 100) + "%"


class Sim(ABC):
    """A headless sim. Subclasses set the class attributes and implement `_compute`."""

    name: str
    title: str
    summary: str
    inputs: tuple[InputSpec, ...]
    presets: dict[str, Preset]

    def spec(self, name: str) -> InputSpec:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        known = ", ".join(s.name for s in self.inputs)
        raise SimInputError(f"unknown input '{name}' for sim {self.name}; known inputs: {known}")

    def defaults(self) -> dict[str, Value]:
        return {s.name: s.default for s in self.inputs}

    def preset(self, name: str) -> Preset:
        try:
            return self.presets[name]
        except KeyError:
            known = ", ".join(self.presets) or "none"
            raise SimInputError(
                f"unknown preset '{name}' for sim {self.name}; known presets: {known}"
            ) from None

    def resolve(
        self, values: Mapping[str, object] | None = None, preset: str | None = None
    ) -> dict[str, Value]:
        """Defaults, then the preset, then `values`; every value checked against its spec."""
        resolved = self.defaults()
        layers: list[Mapping[str, object]] = []
        if preset is not None:
            layers.append(self.preset(preset).values)
        if values:
            layers.append(values)
        for layer in layers:
            for key, value in layer.items():
                resolved[key] = self.spec(key).validate(value)
        self._cross_check(resolved)
        return resolved

    def parse_assignments(self, items: Sequence[str]) -> dict[str, Value]:
        """Parse ['key=value', ...] from the command line into checked values."""
        parsed: dict[str, Value] = {}
        for item in items:
            key, sep, text = item.partition("=")
            if not sep or not key.strip():
                raise SimInputError(f"'{item}' is not of the form key=value")
            parsed[key.strip()] = self.spec(key.strip()).parse(text)
        return parsed

    def notes(self, items: Sequence[str]) -> list[str]:
        """What the reader should know about how ['key=value', ...] was read (`8k` context is
        8,192 tokens); call after `parse_assignments` has accepted the items."""
        found = []
        for item in items:
            key, _, text = item.partition("=")
            note = self.spec(key.strip()).note(text)
            if note is not None:
                found.append(note)
        return found

    def evaluate(
        self, inputs: Mapping[str, object] | None = None, preset: str | None = None
    ) -> SimResult:
        """Compute every output, formula line and check for these dials (missing = default)."""
        return self._compute(self.resolve(inputs, preset))

    def _cross_check(self, values: Mapping[str, Value]) -> None:  # noqa: B027 - optional hook
        """Reject combinations of individually valid dials that make no sense (override)."""

    @abstractmethod
    def _compute(self, v: Mapping[str, Value]) -> SimResult: ...
