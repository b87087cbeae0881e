"""Which values a learner is given by the prompt, and which the answer needs but never shows.

Walking back from the answer formula through derived values, the walk stops at any name the
prompt shows (directly, or through a label of it): the learner is given that number. A drawn
value reached without being shown is hidden, and the question cannot be answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from questions.formula import Formula


@dataclass(frozen=True)
class Givens:
    given: frozenset[str]  # names the answer uses that the prompt states
    hidden: frozenset[str]  # drawn names the answer needs that the prompt never states


def trace_givens(
    answer: Formula,
    shown: Iterable[str],
    drawn: Iterable[str],
    derived: Mapping[str, Formula],
    label_sources: Mapping[str, str],
) -> Givens:
    """`shown`: placeholder names in the prompt; `label_sources`: label name -> source value."""
    shown_set = set(shown)
    shown_set |= {source for label, source in label_sources.items() if label in shown_set}
    drawn_set = set(drawn)
    given: set[str] = set()
    hidden: set[str] = set()
    seen: set[str] = set()
    stack = list(answer.names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in shown_set:
            given.add(name)
        elif name in derived:
            stack.extend(derived[name].names)
        elif name in drawn_set:
            hidden.add(name)
    return Givens(frozenset(given), frozenset(hidden))
