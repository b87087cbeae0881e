"""Read one question file into typed objects, checking its schema as it goes.

Every problem is recorded with file:line:field instead of raised, so one bad question never stops
the rest of the bank from loading. A question with any problem is left out (its id is still
recorded, so duplicates and related links are judged against everything the author wrote).
Checks that need other files (unique ids, related ids) or many draws live in `validate`.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from questions.formula import FUNCTIONS, Formula, FormulaError, compile_formula
from questions.givens import trace_givens
from questions.limits import (
    MAX_FILE_BYTES,
    MAX_ID_CHARS,
    MAX_ITEMS,
    MAX_QUESTIONS,
    MAX_TEXT_CHARS,
)
from questions.lines import Block, LineIndex
from questions.model import (
    ROUNDINGS,
    Label,
    LabLink,
    Mistake,
    Param,
    Question,
    RoundedFormula,
    Rounding,
    Step,
    Tolerance,
    Topic,
    Value,
)
from questions.problems import Problem
from questions.render import RenderError, placeholders
from questions.units import COUNTED_UNITS, is_known_unit
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


def parse_file(path: Path, exercises: Mapping[str, int] | None,
               sims: Collection[str] | None = (), *, strict: bool = True) -> ParsedFile:
    """Parse and schema-check one topic file; `exercises` maps lab ids to their level count,
    `sims` names the sims a question may link to (both from lab's catalogue, which the caller
    supplies: `trainer.core.catalogue`; None checks only the link's shape).
    `strict` False (a learner's pack) turns missing mistakes and whys into warnings."""
    try:
        with path.open("rb") as handle:  # never more than the limit + 1 byte in memory
            content = handle.read(MAX_FILE_BYTES + 1)
        if len(content) > MAX_FILE_BYTES:
            size = path.stat().st_size
            parsed = ParsedFile(path, LineIndex(""))
            parsed.problems.append(Problem(path, 1, "file", (
                f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,} (split it into "
                "several topic files)")))
            return parsed
        text = content.decode("utf-8-sig")  # a Windows editor may save a BOM
    except (OSError, UnicodeDecodeError) as exc:
        parsed = ParsedFile(path, LineIndex(""))
        parsed.problems.append(Problem(path, 1, "file", f"cannot read: {exc}"))
        return parsed
    parsed = ParsedFile(path, LineIndex(text), strict=strict)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = int(found.group(1)) if found else 1
        parsed.problems.append(Problem(path, line, "toml", f"not valid TOML: {exc}"))
        return parsed
    for key in sorted(set(data) - {"topic", "question"}):
        parsed.problems.append(
            Problem(path, 1, key, "unknown top-level key (expected [topic] and [[question]])")
        )
    parsed.topic = _topic(parsed, data.get("topic"))
    raw_questions = data.get("question")
    if not isinstance(raw_questions, list) or not raw_questions:
        parsed.problems.append(
            Problem(path, 1, "question", "no [[question]] tables: a topic file needs questions")
        )
        return parsed
    if len(raw_questions) > MAX_QUESTIONS:
        line = parsed.index.question_line(MAX_QUESTIONS)
        parsed.problems.append(Problem(path, line, "question", (
            f"{len(raw_questions):,} [[question]] tables; the limit is {MAX_QUESTIONS:,} per file "
            "(split it into several topic files)")))
        return parsed
    topic_id = parsed.topic.id if parsed.topic else ""
    for i, raw in enumerate(raw_questions):
        block = parsed.index.questions[i] if i < len(parsed.index.questions) else None
        question = _QuestionReader(parsed, block, raw, i, topic_id, exercises, sims).read()
        if question is not None:
            parsed.questions.append(question)
    return parsed


def _topic(parsed: ParsedFile, raw: object) -> Topic | None:
    block = parsed.index.topic
    if not isinstance(raw, dict):
        parsed.problems.append(
            Problem(parsed.path, 1, "topic", "missing [topic] table (id, title, note)")
        )
        return None
    before = len(parsed.problems)
    for key in sorted(set(raw) - TOPIC_KEYS):
        parsed.problem(block, key, "topic", "unknown key (expected id, title, note)")
    topic_id = raw.get("id")
    if isinstance(topic_id, str) and len(topic_id) > MAX_ID_CHARS:
        parsed.problem(block, "id", "topic", _too_long("id", len(topic_id), MAX_ID_CHARS))
    elif not isinstance(topic_id, str) or not ID_PATTERN.match(topic_id):
        parsed.problem(block, "id", "topic", "id must be kebab-case text, e.g. \"kv-cache\"")
    for key in ("title", "note"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            parsed.problem(block, key, "topic", f"{key} must be non-empty text")
        elif len(value) > MAX_TEXT_CHARS[key]:
            parsed.problem(block, key, "topic", _too_long(key, len(value), MAX_TEXT_CHARS[key]))
    if len(parsed.problems) > before:
        return None
    line = block.main.line if block else 1
    return Topic(str(topic_id), str(raw["title"]).strip(), str(raw["note"]).strip(), parsed.path,
                 line)


class _QuestionReader:
    """Reads one [[question]] table; `ok` turns false on the first problem it records."""

    MISTAKE_TABLE = "question.mistake"

    def __init__(self, parsed: ParsedFile, block: Block | None, raw: object, position: int,
                 topic_id: str, exercises: Mapping[str, int] | None,
                 sims: Collection[str] | None) -> None:
        self.parsed, self.block, self.topic_id, self.exercises = parsed, block, topic_id, exercises
        self.sims = sims
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.label = f"question[{position + 1}]"
        self.ok = isinstance(raw, dict)
        if not self.ok:
            parsed.problems.append(Problem(parsed.path, 1, self.label, "must be a table"))

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

    def read(self) -> Question | None:
        raw = self.raw
        qid = raw.get("id")
        if isinstance(qid, str) and len(qid) > MAX_ID_CHARS:
            self.fail("id", _too_long("id", len(qid), MAX_ID_CHARS))
            return None
        if isinstance(qid, str) and ID_PATTERN.match(qid):
            self.label = qid
        if not self._sizes_ok():  # before any parsing or rendering: refused quickly
            if isinstance(qid, str) and ID_PATTERN.match(qid):
                self.parsed.declared.append((qid, self.parsed.index.locate(self.block, "id")))
            return None
        if not isinstance(qid, str) or not ID_PATTERN.match(qid):
            self.fail("id", "id must be a stable kebab-case text id, e.g. \"kv-cache-001\"")
        else:
            self.label = qid
            line = self.parsed.index.locate(self.block, "id")
            self.parsed.declared.append((qid, line))
            if self.block is not None:
                self.parsed.blocks.setdefault(qid, self.block)
        for key in sorted(set(raw) - QUESTION_KEYS):
            self.fail(key, f"unknown key (known: {', '.join(sorted(QUESTION_KEYS))})")
        if "topic" in raw and raw["topic"] != self.topic_id:
            self.fail("topic", f"topic {raw['topic']!r} differs from the file's [topic] id "
                      f"{self.topic_id!r} (leave it out: the file's topic applies)")
        kind = raw.get("kind")
        if kind not in KINDS:
            self.fail("kind", f"kind must be \"mcq\", \"numeric\" or \"case\", got {kind!r}")
        difficulty = raw.get("difficulty")
        if not _is_int(difficulty) or not 1 <= difficulty <= 5:
            self.fail("difficulty", f"difficulty must be a whole number 1..5, got {difficulty!r}")
        lab = self._lab(raw.get("lab"))
        sim = raw.get("sim")
        if sim is not None and self.sims is None and (not isinstance(sim, str) or not sim):
            self.fail("sim", f"sim must be a sim's name, got {sim!r}")
        elif sim is not None and self.sims is not None and sim not in self.sims:
            self.fail("sim", f"sim must be one of {', '.join(sorted(self.sims))}, got {sim!r}")
        related = self._text_list("related")
        for other in related:
            if not ID_PATTERN.match(other):
                self.fail("related", f"related id {other!r} is not a valid id")
            elif other == qid:
                self.fail("related", "a question cannot be related to itself")
        sources = self._text_list("sources")
        prompt = self._text("prompt")
        explanation = self._text("explanation")

        params = self._params(raw.get("params"))
        cases = self._cases(raw.get("cases"))
        raw_params = raw.get("params")
        # a param with a bad spec is still declared: its uses are not errors of their own
        declared = set(raw_params) if isinstance(raw_params, dict) else set(params)
        drawn_names = declared | {k for case in cases[:1] for k in case}
        for name in sorted(set(params) & {k for case in cases[:1] for k in case}):
            self.fail(f"params.{name}", f"{name!r} is also defined in [[question.cases]]")
        derived = self._derived(raw.get("derived"), drawn_names)
        labels = self._labels(raw.get("labels"), params, cases, drawn_names | set(derived))

        unit: str = ""
        tolerance: Tolerance | None = None
        answer: Formula | None = None
        choices: tuple[str, ...] = ()
        correct: int | None = None
        mistakes: tuple[Mistake, ...] = ()
        why: tuple[str, ...] = ()
        rounding: Rounding | None = None
        raw_derived, raw_labels = raw.get("derived"), raw.get("labels")
        known = drawn_names | set(derived)
        if isinstance(raw_derived, dict):
            known |= set(raw_derived)
        labels_declared = set(raw_labels) if isinstance(raw_labels, dict) else set(labels)
        if kind == "numeric":
            unit, tolerance, answer, rounding = self._numeric(known)
            mistakes = self._mistakes(known)
        elif kind == "mcq":
            choices, correct = self._mcq()
            why = self._why(choices, correct)
            if self.parsed.strict and explanation and not MISCONCEPTION.search(explanation):
                self.fail("explanation", "an MCQ explanation names the misconception behind the "
                          "most tempting wrong choice: add \"Misconception: ...\" (the choice's "
                          "why says it in one line; the explanation says why it fails)")
        if kind != "case" and "step" in raw:
            self.fail("step", "steps belong to case studies (kind = \"case\")")
        if "{answer" in prompt and "answer" in _placeholder_names(prompt):
            self.fail("prompt", "the prompt cannot show {answer}: that gives the answer away")
        text_names = known | labels_declared | {"answer"}
        steps: tuple[Step, ...] = ()
        step_names: set[str] = set()
        if kind == "case":
            text_names = known | labels_declared  # the scenario has no single answer
            step_names = self._step_names()
        texts_ok = True
        for key, text in (("prompt", prompt), ("explanation", explanation),
                          *((f"choices[{i}]", c) for i, c in enumerate(choices))):
            names = text_names | step_names if key == "explanation" else text_names
            texts_ok &= self._check_placeholders(key.split("[")[0], text, names)
        if kind == "case" and isinstance(qid, str):
            steps = self._steps(qid, prompt, known, labels_declared, params, cases, derived,
                                labels, lab, difficulty)
        if answer is not None and prompt and texts_ok and len(labels) == len(labels_declared) \
                and len(params) == len(declared):
            self._check_visible(prompt, answer, params, cases, derived, labels)
        if not self.ok or not isinstance(qid, str) or kind not in KINDS:
            return None
        return Question(
            id=qid, topic=self.topic_id, kind=kind, prompt=prompt, explanation=explanation,
            lab=lab, difficulty=difficulty if _is_int(difficulty) else 0, source=self.parsed.path,
            line=self.block.main.line if self.block else 1, sim=sim, related=tuple(related),
            sources=tuple(sources), unit=unit, tolerance=tolerance, answer=answer,
            choices=choices, correct=correct, params=params, cases=tuple(cases),
            derived=derived, labels=labels, mistakes=mistakes, why=why, round=rounding,
            steps=steps,
        )

    # -- case studies -------------------------------------------------------------------------

    def _raw_steps(self) -> list[dict[str, Any]]:
        raw = self.raw.get("step")
        return raw if isinstance(raw, list) and all(isinstance(s, dict) for s in raw) else []

    def _step_names(self) -> set[str]:
        return {str(s["name"]) for s in self._raw_steps() if isinstance(s.get("name"), str)}

    def _steps(self, qid: str, scenario: str, known: set[str], label_names: set[str],
               params: Mapping[str, Param], cases: list[dict[str, Value]],
               derived: Mapping[str, Formula], labels: Mapping[str, Label],
               lab: LabLink | None, difficulty: object) -> tuple[Step, ...]:
        """A case's [[question.step]] tables: each a numeric question over the case's values
        and the earlier steps' answers (revealed before the next step is asked)."""
        for key in (*NUMERIC_ONLY, "choices", "correct", "why"):
            if key in self.raw:
                self.fail(key, f"{key} belongs to a case's steps ([[question.step]]), not to the "
                          "case itself")
        raw = self.raw.get("step")
        if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw) or \
                not MIN_STEPS <= len(raw) <= MAX_STEPS:
            count = len(raw) if isinstance(raw, list) else 0
            self.fail("step", f"a case needs {MIN_STEPS}-{MAX_STEPS} [[question.step]] tables "
                      f"(name, prompt, explanation, unit, answer, mistakes), got {count}")
            return ()
        steps: list[Step] = []
        earlier: dict[str, Formula] = {}
        context = [scenario]
        taken = known | label_names
        for i, entry in enumerate(raw):
            reader = _StepReader(self, entry, i)
            step = reader.read(qid, context, taken, earlier, params, cases, derived, labels,
                               lab, difficulty)
            name = entry.get("name")
            if isinstance(name, str):
                taken = taken | {name}
            if step is None:
                continue
            steps.append(step)
            assert step.question.answer is not None
            answer = step.question.answer
            earlier[step.name] = answer if step.question.round is None else RoundedFormula(
                answer.source, answer.names, answer._tree, step.question.round)
            context = [*context, step.prompt]
        return tuple(steps) if len(steps) == len(raw) else ()

    # -- pieces -------------------------------------------------------------------------------

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
        for key in ("prompt", "explanation"):
            value = raw.get(key)
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS[key]:
                self.fail(prefix + key, _too_long(key, len(value), MAX_TEXT_CHARS[key]))
        for key, limit in MAX_ITEMS.items():
            value = raw.get(key)
            if isinstance(value, list | dict) and len(value) > limit:
                self.fail(prefix + key, f"{len(value):,} {key} entries; the limit is {limit}")
        for key, limit_key in (("choices", "choice"), ("why", "why"), ("sources", "source"),
                               ("related", "id")):
            value = raw.get(key)
            if not isinstance(value, list):
                continue
            limit = MAX_ID_CHARS if limit_key == "id" else MAX_TEXT_CHARS[limit_key]
            for i, item in enumerate(value[:MAX_ITEMS.get(key, 4) + 1]):
                if isinstance(item, str) and len(item) > limit:
                    self.fail(f"{prefix}{key}[{i}]", _too_long(f"{key}[{i}]", len(item), limit))
        name = raw.get("name")
        if prefix and isinstance(name, str) and len(name) > MAX_ID_CHARS:
            self.fail(prefix + "name", _too_long("name", len(name), MAX_ID_CHARS))
        for key in ("params", "derived", "labels"):
            table = raw.get(key)
            if isinstance(table, dict) and len(table) <= MAX_ITEMS[key]:
                for name in table:
                    if len(name) > MAX_ID_CHARS:
                        self.fail(f"{prefix}{key}", _too_long(f"a name in {key}", len(name),
                                                              MAX_ID_CHARS))
                        break
        labels = raw.get("labels")
        if isinstance(labels, dict) and len(labels) <= MAX_ITEMS["labels"]:
            for lname, spec in labels.items():
                mapping = spec.get("map") if isinstance(spec, dict) else None
                if isinstance(mapping, dict) and any(
                        isinstance(v, str) and len(v) > MAX_TEXT_CHARS["text value"]
                        for v in mapping.values()):
                    self.fail(f"{prefix}labels.{lname[:MAX_ID_CHARS]}", (
                        f"a label text is over {MAX_TEXT_CHARS['text value']} characters"))
        cases = raw.get("cases")
        if isinstance(cases, list) and len(cases) <= MAX_ITEMS["cases"]:
            for i, case in enumerate(cases):
                if isinstance(case, dict) and (len(case) > MAX_ITEMS["params"] or any(
                        len(k) > MAX_ID_CHARS or (isinstance(v, str) and
                                                  len(v) > MAX_TEXT_CHARS["text value"])
                        for k, v in case.items())):
                    self.fail(f"{prefix}cases[{i}]", (
                        f"a case row may have {MAX_ITEMS['params']} values, names up to "
                        f"{MAX_ID_CHARS} characters and texts up to "
                        f"{MAX_TEXT_CHARS['text value']}"))
                    break
        mistakes = raw.get("mistake")
        if isinstance(mistakes, list) and len(mistakes) <= MAX_ITEMS["mistake"]:
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

    def _name_ok(self, where: str, name: str) -> bool:
        if not NAME_PATTERN.match(name) or name in RESERVED_NAMES:
            self.fail(where, f"{name!r} is not a usable name (letters, digits, _; not answer or "
                      "a function name)")
            return False
        return True

    def _params(self, raw: object) -> dict[str, Param]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("params", "params must be a table of name = { choices = [...] } or "
                      "{ min = .., max = .., step = .. }")
            return {}
        params: dict[str, Param] = {}
        for name, spec in raw.items():
            where = f"params.{name}"
            if not self._name_ok(where, name):
                continue
            if not isinstance(spec, dict):
                self.fail(where, "must be { choices = [...] } or { min = .., max = .., step = .. }")
                continue
            extra = set(spec) - {"choices", "min", "max", "step"}
            if extra:
                self.fail(where, f"unknown keys {sorted(extra)} (expected choices or min/max/"
                          "step)")
                continue
            if "choices" in spec:
                choices = spec["choices"]
                if set(spec) != {"choices"} or not isinstance(choices, list) or not choices or \
                        not all(_is_number(c) for c in choices):
                    self.fail(where, "choices must be a non-empty list of numbers (and nothing "
                              "else in the table)")
                    continue
                params[name] = Param(name, choices=tuple(choices))
                continue
            lo, hi, step = spec.get("min"), spec.get("max"), spec.get("step")
            if not (_is_number(lo) and _is_number(hi)) or lo >= hi:
                self.fail(where, f"needs numbers min < max, got min={lo!r} max={hi!r}")
                continue
            if step is not None and (not _is_number(step) or step <= 0 or step > hi - lo):
                self.fail(where, f"step must be a number in (0, max - min], got {step!r}")
                continue
            integer = all(_is_int(v) for v in (lo, hi, step) if v is not None)
            params[name] = Param(name, min=lo, max=hi, step=step, integer=integer)
        return params

    def _cases(self, raw: object) -> list[dict[str, Value]]:
        if raw is None:
            return []
        if not isinstance(raw, list) or not raw or not all(isinstance(c, dict) for c in raw):
            self.fail("cases", "cases must be [[question.cases]] tables")
            return []
        keys = set(raw[0])
        cases: list[dict[str, Value]] = []
        for i, case in enumerate(raw):
            where = f"cases[{i}]"
            if set(case) != keys:
                self.fail(where, f"every case needs the same keys as the first: {sorted(keys)}")
                continue
            for name, value in case.items():
                if self._name_ok(where, name) and not (_is_number(value) or
                                                       isinstance(value, str)):
                    self.fail(f"{where}.{name}", "case values must be numbers or text")
            cases.append(dict(case))
        return cases

    def _derived(self, raw: object, defined: set[str]) -> dict[str, Formula]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("derived", "derived must be a table of name = \"formula\"")
            return {}
        derived: dict[str, Formula] = {}
        known = set(defined)
        for name, source in raw.items():
            where = f"derived.{name}"
            if not self._name_ok(where, name):
                continue
            if name in known:
                self.fail(where, f"{name!r} is already a parameter or derived value")
                continue
            formula = self._formula(where, source, known)
            if formula is not None:
                derived[name] = formula
            known.add(name)
        return derived

    def _formula(self, where: str, source: object, known: set[str]) -> Formula | None:
        if _is_number(source):
            source = repr(source)
        if not isinstance(source, str):
            self.fail(where, "a formula must be text (or a number)")
            return None
        try:
            formula = compile_formula(source)
        except FormulaError as exc:
            self.fail(where, f"bad formula {source!r}: {exc}")
            return None
        unknown = sorted(formula.names - known)
        if unknown:
            self.fail(where, f"formula uses undefined {noun(len(unknown), 'name')} "
                             f"{', '.join(unknown)} (define them "
                      "in params, cases or an earlier derived entry)")
            return None
        return formula

    def _labels(self, raw: object, params: Mapping[str, Param], cases: list[dict[str, Value]],
                taken: set[str]) -> dict[str, Label]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("labels", "labels must be a table of name = { from = .., map = {..} }")
            return {}
        labels: dict[str, Label] = {}
        for name, spec in raw.items():
            where = f"labels.{name}"
            if not self._name_ok(where, name):
                continue
            if name in taken:
                self.fail(where, f"{name!r} is already a parameter or derived value")
                continue
            if not isinstance(spec, dict) or set(spec) != {"from", "map"} or \
                    not isinstance(spec["map"], dict) or \
                    not all(isinstance(v, str) for v in spec["map"].values()):
                self.fail(where, "must be { from = \"param\", map = { \"value\" = \"text\" } }")
                continue
            source = spec["from"]
            values: list[Value]
            if source in params and params[source].choices:
                values = list(params[source].choices)
            elif cases and isinstance(source, str) and source in cases[0]:
                values = [case[source] for case in cases]
            else:
                self.fail(f"{where}.from", f"from must name a choices parameter or a case value, "
                          f"got {source!r}")
                continue
            label = Label(name, str(source), dict(spec["map"]))
            missing = [v for v in values if label.text_for(v) is None]
            if missing:
                self.fail(f"{where}.map", f"no text for {source} = {missing[0]!r}")
                continue
            labels[name] = label
        return labels

    def _numeric(self, known: set[str]) -> tuple[str, Tolerance | None, Formula | None,
                                                  Rounding | None]:
        raw = self.raw
        for key in ("choices", "correct", "why"):
            if key in raw:
                self.fail(key, f"{key} belongs to mcq questions, not numeric ones")
        unit = raw.get("unit")
        if not isinstance(unit, str):
            self.fail("unit", "numeric questions need unit = \"...\" (\"\" for a plain number)")
            unit = ""
        elif not is_known_unit(unit):
            self.fail("unit", f"unknown unit {unit!r} (see docs/question-format.md#units)")
        rounding = raw.get("round")
        if rounding is not None and rounding not in ROUNDINGS:
            self.fail("round", f"round must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
            rounding = None
        elif rounding is None and unit in COUNTED_UNITS:
            self.fail("round", f"{unit} are counted: add round = \"up\" (capacity that must "
                      "cover demand), \"down\" (what fits) or \"nearest\"")
        # a counted answer is a whole number and is matched exactly unless a tolerance is given
        tolerance = Tolerance(abs=0.5) if rounding is not None and "tolerance" not in raw \
            else self._tolerance(raw.get("tolerance"))
        if "answer" not in raw:
            self.fail("answer", "numeric questions need answer = a number or a formula")
            return unit, tolerance, None, rounding
        answer = self._formula("answer", raw["answer"], known)
        return unit, tolerance, answer, rounding

    def _mistakes(self, known: set[str]) -> tuple[Mistake, ...]:
        raw = self.raw.get("mistake")
        if raw is None:
            self.fail_or_warn("mistake", f"numeric questions need at least one "
                              f"[[{self.MISTAKE_TABLE}]] (id, formula, says): the wrong path the "
                              "explanation warns about" + ("" if self.parsed.strict else
                                                           "; until then only generic hints"))
            return ()
        if not isinstance(raw, list) or not raw or not all(isinstance(m, dict) for m in raw):
            self.fail("mistake", "mistakes must be [[question.mistake]] tables")
            return ()
        mistakes: list[Mistake] = []
        seen: set[str] = set()
        for i, entry in enumerate(raw):
            where = f"mistake[{i}]"
            for key in sorted(set(entry) - MISTAKE_KEYS):
                self.fail(f"{where}.{key}", "unknown key (expected id, formula, says)")
            mid, says = entry.get("id"), entry.get("says")
            if not isinstance(mid, str) or not MISTAKE_ID.match(mid):
                self.fail(f"{where}.id", f"id must be kebab-case text, got {mid!r}")
                continue
            if mid in seen:
                self.fail(f"{where}.id", f"mistake id {mid!r} is used twice in this question")
                continue
            seen.add(mid)
            if not isinstance(says, str) or not says.strip() or "\n" in says.strip():
                self.fail(f"{where}.says", "says must be one line: what the learner did, e.g. "
                          "\"added a full TPOT for the first token as well as TTFT\"")
                continue
            if "formula" not in entry:
                self.fail(f"{where}.formula", "a mistake needs formula = the value it gives")
                continue
            formula = self._formula(f"{where}.formula", entry["formula"], known)
            if formula is not None:
                mistakes.append(Mistake(mid, formula, says.strip()))
        return tuple(mistakes)

    def _why(self, choices: tuple[str, ...], correct: int | None) -> tuple[str, ...]:
        raw = self.raw.get("why")
        if raw is None:
            self.fail_or_warn("why", "mcq questions need why = [...]: for each choice the "
                              "misconception that leads to it (\"\" for the correct one)")
            return ()
        if not choices:
            return ()  # the choices themselves are reported
        if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw) or \
                len(raw) != len(choices):
            self.fail("why", f"why must be a list of {len(choices) or 4} texts, parallel to "
                      "choices")
            return ()
        if correct is None:
            return ()
        for i, text in enumerate(raw):
            if i == correct and text.strip():
                self.fail("why", f"why[{i}] belongs to the correct choice: leave it \"\" (the "
                          "explanation says why it is right)")
            elif i != correct and not text.strip():
                self.fail_or_warn("why", f"why[{i}] is empty: say which misconception leads to "
                                  f"choice {i} ({choices[i][:40]!r})")
        return tuple(" ".join(text.split()) for text in raw)

    def _tolerance(self, raw: object) -> Tolerance | None:
        if not isinstance(raw, dict) or not raw or set(raw) - {"rel", "abs"}:
            self.fail("tolerance", "tolerance must be { rel = 0.01 } and/or { abs = 0.5 }")
            return None
        rel, abs_ = raw.get("rel"), raw.get("abs")
        if rel is not None and (not _is_number(rel) or not 0 < rel <= MAX_REL_TOLERANCE):
            self.fail("tolerance.rel", f"rel must be in (0, {MAX_REL_TOLERANCE}] (a fraction: "
                      f"0.01 = 1%), got {rel!r}")
            return None
        if abs_ is not None and (not _is_number(abs_) or not 0 < abs_ < math.inf):
            self.fail("tolerance.abs", f"abs must be a positive number, got {abs_!r}")
            return None
        return Tolerance(rel=rel, abs=abs_)

    def _mcq(self) -> tuple[tuple[str, ...], int | None]:
        raw = self.raw
        for key in ("unit", "tolerance", "answer", "mistake", "round"):
            if key in raw:
                self.fail(key, f"{key} belongs to numeric questions; mcq uses choices/correct")
        choices = raw.get("choices")
        if not isinstance(choices, list) or len(choices) != 4 or \
                not all(isinstance(c, str) and c.strip() for c in choices):
            self.fail("choices", "mcq needs exactly 4 non-empty text choices")
            return (), None
        stripped = [" ".join(c.split()).casefold() for c in choices]
        if len(set(stripped)) != 4:
            dupe = next(c for c in choices if stripped.count(" ".join(c.split()).casefold()) > 1)
            self.fail("choices", f"choices must be distinct; {dupe!r} appears twice")
        correct = raw.get("correct")
        if not _is_int(correct) or not 0 <= correct < 4:
            self.fail("correct", f"correct must be an index 0..3 into choices, got {correct!r}")
            return tuple(c.strip() for c in choices), None
        return tuple(c.strip() for c in choices), int(correct)

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


class _StepReader(_QuestionReader):
    """One [[question.step]] of a case, read with the numeric rules; problems are reported at
    `step[i].<field>` of the case."""

    MISTAKE_TABLE = "question.step.mistake"

    def __init__(self, parent: _QuestionReader, raw: dict[str, Any], index: int) -> None:
        self.parent, self.index = parent, index
        self.parsed, self.block, self.topic_id = parent.parsed, parent.block, parent.topic_id
        self.exercises, self.sims, self.label = parent.exercises, parent.sims, parent.label
        self.raw = raw
        self.ok = True

    def fail(self, field_path: str, message: str) -> None:
        self.ok = False
        self.parent.fail(f"step[{self.index}].{field_path}", message)

    def read(self, qid: str, context: list[str], taken: set[str],  # type: ignore[override]
             earlier: Mapping[str, Formula], params: Mapping[str, Param],
             cases: list[dict[str, Value]], derived: Mapping[str, Formula],
             labels: Mapping[str, Label], lab: LabLink | None,
             difficulty: object) -> Step | None:
        raw = self.raw
        for key in sorted(set(raw) - STEP_KEYS):
            self.fail(key, f"unknown key (known: {', '.join(sorted(STEP_KEYS))})")
        name = raw.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.match(name) or name in RESERVED_NAMES:
            self.fail("name", f"name must be an identifier the later steps can use for this "
                      f"step's value (letters, digits, _), got {name!r}")
            name = None
        elif name in taken:
            self.fail("name", f"{name!r} is already a parameter, derived value, label or an "
                      "earlier step's name")
        prompt, explanation = self._text("prompt"), self._text("explanation")
        known = set(taken) | set(earlier)
        unit, tolerance, answer, rounding = self._numeric(known)
        mistakes = self._mistakes(known)
        names_before = known | {n for n in labels}
        if prompt:
            self._check_placeholders("prompt", prompt, names_before)
        if explanation:
            self._check_placeholders("explanation", explanation,
                                     names_before | {"answer"} | ({name} if name else set()))
        # what the learner has been told by now: the scenario, the earlier steps' prompts and
        # (revealed after each) the earlier steps' correct values
        shown = "\n\n".join([*context, prompt, *("{" + n + "}" for n in earlier)])
        all_derived = {**derived, **earlier}
        if answer is not None and prompt and self.ok:
            self._check_visible(shown, answer, params, cases, all_derived, labels)
        if not self.ok or name is None or answer is None:
            return None
        question = Question(
            id=f"{qid}.step{self.index + 1}", topic=self.topic_id, kind="numeric", prompt=shown,
            explanation=explanation, lab=lab, difficulty=difficulty if _is_int(difficulty) else 0,
            source=self.parsed.path, line=self.parsed.index.locate(self.block,
                                                                    f"step[{self.index}]"),
            unit=unit, tolerance=tolerance, answer=answer, params=params, cases=tuple(cases),
            derived=all_derived, labels=labels, mistakes=mistakes, round=rounding,
        )
        return Step(name, prompt, explanation, question)


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
