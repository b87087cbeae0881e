"""Fill `{name}` / `{name:spec}` placeholders in question text with a draw's values.

Only bare names are allowed (no `{a.b}`, `{a[0]}`, `{a!r}`): bank text is untrusted and
`str.format` attribute access would reach into Python objects. `{{` and `}}` are literal braces.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping

from questions.limits import MAX_FORMAT_NUMBER

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SPEC_NUMBER = re.compile(r"\d+")
_FORMATTER = string.Formatter()


class RenderError(ValueError):
    """A placeholder that cannot be filled: unknown name, bad syntax or a bad format spec."""


def placeholders(template: str) -> list[str]:
    """The names a template uses, in order; raises RenderError on malformed placeholders."""
    names = []
    for _, field, spec, conversion in _parse(template):
        if field is None:
            continue
        _check_field(field, spec, conversion)
        names.append(field)
    return names


def render(template: str, values: Mapping[str, object]) -> str:
    """The template with every placeholder filled; raises RenderError if any cannot be."""
    out: list[str] = []
    for literal, field, spec, conversion in _parse(template):
        out.append(literal)
        if field is None:
            continue
        _check_field(field, spec, conversion)
        if field not in values:
            raise RenderError(f"unknown placeholder {{{field}}}")
        out.append(format_value(values[field], spec or "", field))
    return "".join(out)


def format_value(value: object, spec: str, name: str = "value") -> str:
    """Format one value; integral floats print as integers unless a spec says otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        raise RenderError(f"{{{name}}} is not a finite number ({value})")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 and (
        not spec or spec[-1:] in ("d", "n") or spec == ","
    ):
        value = int(value)
    if not spec:
        if isinstance(value, float):
            return f"{value:.10g}"
        return str(value)
    try:
        return format(value, spec)
    except (ValueError, TypeError) as exc:
        raise RenderError(f"{{{name}:{spec}}}: {exc}") from None


def _parse(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(_FORMATTER.parse(template))
    except ValueError as exc:
        hint = "write {{ and }} for literal braces"
        raise RenderError(f"malformed placeholder: {exc} ({hint})") from None


def _check_field(field: str, spec: str | None, conversion: str | None) -> None:
    if not _NAME.match(field):
        raise RenderError(f"placeholder {{{field}}} must be a plain name (letters, digits, _); "
                          "write {{ and }} for literal braces")
    if conversion:
        raise RenderError(f"placeholder {{{field}!{conversion}}}: conversions are not allowed")
    if spec and ("{" in spec or "}" in spec):
        raise RenderError(f"placeholder {{{field}:{spec}}}: nested placeholders are not allowed")
    if spec:
        # width and precision are the only numbers in a spec (the fill is one character): a
        # {x:>100000000} would build a 100 MB string on every render
        for number in _SPEC_NUMBER.findall(spec[1:] if spec[1:2] in "<>=^" else spec):
            digits = number.lstrip("0") or "0"
            if len(digits) > len(str(MAX_FORMAT_NUMBER)) or int(digits) > MAX_FORMAT_NUMBER:
                shown = digits if len(digits) <= 12 else digits[:12] + "…"
                raise RenderError(f"placeholder {{{field}:{spec[:20]}}}: width or precision "
                                  f"{shown} is over the limit of {MAX_FORMAT_NUMBER}")
