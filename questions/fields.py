"""The field checks every question reader shares: the parsed-file record, the schema's
constants, size limits, plain text fields, the lab link and placeholder visibility.

Split from `questions.loader` (which re-exports these names) so each part stays readable; the
reader classes build on each other: `FieldReader` -> `ValueReader` (params, cases, derived,
labels) -> `AnswerReader` (numeric answers, mistakes, MCQ choices and whys) -> the loader's
question and step readers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from questions.formula import FUNCTIONS, Formula
from questions.givens import trace_givens
from questions.limits import MAX_ID_CHARS, MAX_ITEMS, MAX_TEXT_CHARS
from questions.lines import Block, LineIndex
from questions.model import Label, LabLink, Param, Question, Topic, Value
from questions.problems import Problem
from questions.render import RenderError, placeholders
from questions.wording import noun

ID_PATTERN = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MAX_REL_TOLERANCE = 0.25
QUESTION_KEYS = {
    "id", "topic", "kind", "difficulty", "lab", "sim", "related", "sources", "prompt",
    "explanation", "unit", "tolerance", "answer", "params", "cases", "derived", "labels",
    "choices", "correct", "mistake", "why", "round", "step",
}
MISTAKE_KEYS = {"id", "formula", "says"}
STEP_KEYS = {"name", "prompt", "explanation", "unit", "tolerance", "answer", "round", "mistake"}
MIN_STEPS, MAX_STEPS = 3, 5
KINDS = ("mcq", "numeric", "case")
NUMERIC_ONLY = ("unit", "tolerance", "answer", "mistake", "round")
MISTAKE_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TOPIC_KEYS = {"id", "title", "note"}
RESERVED_NAMES = {"answer", *FUNCTIONS}
MAX_MESSAGE_CHARS = 600
MISCONCEPTION = re.compile(r"\bMisconceptions?:\s*\S")  # an MCQ explanation's named mistake


@dataclass
class ParsedFile:
    path: Path
    index: LineIndex
    topic: Topic | None = None
    questions: list[Question] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # every question id the file declares (valid or not) -> line, and its block for locating
    declared: list[tuple[str, int]] = field(default_factory=list)
    blocks: dict[str, Block] = field(default_factory=dict)
    # strict (the built-in bank, `check --strict`): a question without mistakes or whys, or an
    # MCQ explanation naming no misconception, is a problem; otherwise only the first two are
    # warnings, and the question loads with the generic hints
    strict: bool = True
    warnings: list[Problem] = field(default_factory=list)

    def problem(self, block: Block | None, field_path: str, label: str, message: str) -> None:
        line = self.index.locate(block, field_path) if block is not None else 1
        if len(message) > MAX_MESSAGE_CHARS:  # a message quoting a huge value stays readable
            message = message[:MAX_MESSAGE_CHARS] + "…"
        self.problems.append(Problem(self.path, line, f"{label}.{field_path}", message))

    def locate(self, question_id: str, field_path: str) -> int:
        return self.index.locate(self.blocks.get(question_id), field_path)


class FieldReader:
    """The shared state and plain-field checks of a question (or step) reader; `ok` turns false
    on the first problem it records."""

    parsed: ParsedFile
    block: Block | None
    raw: dict[str, Any]
    label: str
    ok: bool
    topic_id: str
    exercises: Mapping[str, int] | None
    sims: Collection[str] | None

    def fail(self, field_path: str, message: str) -> None:
        self.ok = False
        self.parsed.problem(self.block, field_path, self.label, message)

    def fail_or_warn(self, field_path: str, message: str) -> None:
        """A rule of the built-in bank that a learner's own pack may skip (with a warning)."""
        if self.parsed.strict:
            self.fail(field_path, message)
            return
        before = len(self.parsed.problems)
        self.parsed.problem(self.block, field_path, self.label, message)
        self.parsed.warnings.extend(self.parsed.problems[before:])
        del self.parsed.problems[before:]

    def _sizes_ok(self) -> bool:
        """Every size limit (questions.limits) checked on the raw table, before the costly
        checks: a huge prompt or a thousand derived values is refused at once."""
        before = self.ok
        self.ok = True
        self._table_sizes(self.raw, "")
        steps = self.raw.get("step")
        if isinstance(steps, list):
            for i, step in enumerate(steps[:MAX_STEPS + 1]):
                if isinstance(step, dict):
                    self._table_sizes(step, f"step[{i}].")
        ok = self.ok
        self.ok = before and ok
        return ok

    def _table_sizes(self, raw: Mapping[str, Any], prefix: str) -> None:
        """Every size limit of a question's (or a step's) table, checked before anything is
        parsed, in the order of `SIZE_CHECKS`; each failure names its field."""
        for check in SIZE_CHECKS:
            check(self, raw, prefix)

    def _text_sizes(self, raw: Mapping[str, Any], prefix: str) -> None:
        for key in ("prompt", "explanation"):
            value = raw.get(key)
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS[key]:
                self.fail(prefix + key, _too_long(key, len(value), MAX_TEXT_CHARS[key]))

    def _entry_counts(self, raw: Mapping[str, Any], prefix: str) -> None:
        for key, limit in MAX_ITEMS.items():
            value = raw.get(key)
            if isinstance(value, list | dict) and len(value) > limit:
                self.fail(prefix + key, f"{len(value):,} {key} entries; the limit is {limit}")

    def _item_lengths(self, raw: Mapping[str, Any], prefix: str) -> None:
        for key, limit_key in ITEM_LIMITS:
            value = raw.get(key)
            if not isinstance(value, list):
                continue
            limit = MAX_ID_CHARS if limit_key == "id" else MAX_TEXT_CHARS[limit_key]
            for i, item in enumerate(value[:MAX_ITEMS.get(key, 4) + 1]):
                if isinstance(item, str) and len(item) > limit:
                    self.fail(f"{prefix}{key}[{i}]", _too_long(f"{key}[{i}]", len(item), limit))

    def _step_name_length(self, raw: Mapping[str, Any], prefix: str) -> None:
        name = raw.get("name")
        if prefix and isinstance(name, str) and len(name) > MAX_ID_CHARS:
            self.fail(prefix + "name", _too_long("name", len(name), MAX_ID_CHARS))

    def _table_name_lengths(self, raw: Mapping[str, Any], prefix: str) -> None:
        for key in ("params", "derived", "labels"):
            table = raw.get(key)
            if not isinstance(table, dict) or len(table) > MAX_ITEMS[key]:
                continue
            first = next((len(name) for name in table if len(name) > MAX_ID_CHARS), None)
            if first is not None:
                self.fail(f"{prefix}{key}", _too_long(f"a name in {key}", first, MAX_ID_CHARS))

    def _label_text_lengths(self, raw: Mapping[str, Any], prefix: str) -> None:
        labels = raw.get("labels")
        if not isinstance(labels, dict) or len(labels) > MAX_ITEMS["labels"]:
            return
        limit = MAX_TEXT_CHARS["text value"]
        for lname, spec in labels.items():
            mapping = spec.get("map") if isinstance(spec, dict) else None
            if isinstance(mapping, dict) and any(isinstance(v, str) and len(v) > limit
                                                 for v in mapping.values()):
                self.fail(f"{prefix}labels.{lname[:MAX_ID_CHARS]}",
                          f"a label text is over {limit} characters")

    def _case_row_sizes(self, raw: Mapping[str, Any], prefix: str) -> None:
        cases = raw.get("cases")
        if not isinstance(cases, list) or len(cases) > MAX_ITEMS["cases"]:
            return
        limit = MAX_TEXT_CHARS["text value"]
        for i, case in enumerate(cases):
            if isinstance(case, dict) and (len(case) > MAX_ITEMS["params"] or any(
                    len(k) > MAX_ID_CHARS or (isinstance(v, str) and len(v) > limit)
                    for k, v in case.items())):
                self.fail(f"{prefix}cases[{i}]", (
                    f"a case row may have {MAX_ITEMS['params']} values, names up to "
                    f"{MAX_ID_CHARS} characters and texts up to {limit}"))
                return

    def _mistake_lengths(self, raw: Mapping[str, Any], prefix: str) -> None:
        mistakes = raw.get("mistake")
        if not isinstance(mistakes, list) or len(mistakes) > MAX_ITEMS["mistake"]:
            return
        for i, entry in enumerate(mistakes):
            if not isinstance(entry, dict):
                continue
            mid, says = entry.get("id"), entry.get("says")
            if isinstance(mid, str) and len(mid) > MAX_ID_CHARS:
                self.fail(f"{prefix}mistake[{i}].id", _too_long("id", len(mid), MAX_ID_CHARS))
            if isinstance(says, str) and len(says) > MAX_TEXT_CHARS["says"]:
                self.fail(f"{prefix}mistake[{i}].says",
                          _too_long("says", len(says), MAX_TEXT_CHARS["says"]))

    def _text(self, key: str) -> str:
        value = self.raw.get(key)
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"{key} must be non-empty text (Markdown)")
            return ""
        return value.strip()

    def _text_list(self, key: str) -> list[str]:
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(key, f"{key} must be a list of non-empty strings")
            return []
        return list(value)

    def _lab(self, raw: object) -> LabLink | None:
        """The lab level whose code exercises the question's concept; absent (None) when no
        level does (tests/questions/test_lab_links.py audits every link)."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            self.fail("lab", "lab must be a table like { exercise = \"kv-bytes\", level = 1 }")
            return None
        exercise, level = raw.get("exercise"), raw.get("level")
        for key in sorted(set(raw) - {"exercise", "level"}):
            self.fail(f"lab.{key}", "unknown key (expected exercise, level)")
        if self.exercises is None:  # no catalogue given: only the link's shape is checked
            if not isinstance(exercise, str) or not exercise:
                self.fail("lab.exercise", f"lab exercise must be an exercise id, got {exercise!r}")
                return None
            if not _is_int(level) or level < 1:
                self.fail("lab.level", f"level must be a whole number >= 1, got {level!r}")
                return None
            return LabLink(exercise, int(level))
        if exercise not in self.exercises:
            known = ", ".join(f"{k} (levels 1-{v})" for k, v in sorted(self.exercises.items()))
            self.fail("lab.exercise", f"unknown lab exercise {exercise!r}; known: {known}")
            return None
        top = self.exercises[str(exercise)]
        if not _is_int(level) or not 1 <= level <= top:
            self.fail("lab.level", f"level must be 1..{top} for {exercise}, got {level!r}")
            return None
        return LabLink(str(exercise), int(level))

    def _check_placeholders(self, key: str, text: str, names: set[str]) -> bool:
        try:
            used = placeholders(text)
        except RenderError as exc:
            self.fail(key, str(exc))
            return False
        unknown = sorted(set(used) - names)
        if unknown:
            self.fail(key, f"unfilled {noun(len(unknown), 'placeholder')} "
                           f"{', '.join('{' + n + '}' for n in unknown)}"
                      " (not a param, case value, derived value, label or answer; write {{ }} "
                      "for literal braces)")
            return False
        return True

    def _check_visible(self, prompt: str, answer: Formula, params: Mapping[str, Param],
                       cases: list[dict[str, Value]], derived: Mapping[str, Formula],
                       labels: Mapping[str, Label]) -> None:
        """Every drawn value the answer needs must be stated in the prompt (or be computable
        from values the prompt states)."""
        try:
            shown = placeholders(prompt)
        except RenderError:
            return
        drawn = set(params) | (set(cases[0]) if cases else set())
        traced = trace_givens(answer, shown, drawn, derived,
                              {name: label.source for name, label in labels.items()})
        for name in sorted(traced.hidden):
            where = f"params.{name}" if name in params else "cases"
            self.fail(where, f"the answer depends on {name!r} but the prompt never shows it "
                      f"(add {{{name}}}, a label of it, or a value computed from it)")


def _too_long(what: str, length: int, limit: int) -> str:
    return f"{what} is {length:,} characters long; the limit is {limit:,}"


def _placeholder_names(text: str) -> set[str]:
    try:
        return set(placeholders(text))
    except RenderError:
        return set()


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# (list key, the limit of each item's length: "id" is MAX_ID_CHARS, else MAX_TEXT_CHARS[...])
ITEM_LIMITS = (("choices", "choice"), ("why", "why"), ("sources", "source"), ("related", "id"))
# The size checks of a table, in the order their failures are reported.
SIZE_CHECKS: tuple[Callable[[FieldReader, Mapping[str, Any], str], None], ...] = (
    FieldReader._text_sizes, FieldReader._entry_counts, FieldReader._item_lengths,
    FieldReader._step_name_length, FieldReader._table_name_lengths,
    FieldReader._label_text_lengths, FieldReader._case_row_sizes, FieldReader._mistake_lengths,
)
