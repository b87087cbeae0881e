"""Read one question file into typed objects, checking its schema as it goes.

Every problem is recorded with file:line:field instead of raised, so one bad question never stops
the rest of the bank from loading. A question with any problem is left out (its id is still
recorded, so duplicates and related links are judged against everything the author wrote).
Checks that need other files (unique ids, related ids) or many draws live in `validate`.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from questions.answer_fields import AnswerReader
from questions.fields import (
    ID_PATTERN,
    KINDS,
    MAX_STEPS,
    MIN_STEPS,
    MISCONCEPTION,
    NAME_PATTERN,
    NUMERIC_ONLY,
    QUESTION_KEYS,
    RESERVED_NAMES,
    STEP_KEYS,
    TOPIC_KEYS,
    ParsedFile,
    _is_int,
    _placeholder_names,
    _too_long,
)
from questions.formula import Formula
from questions.limits import MAX_FILE_BYTES, MAX_ID_CHARS, MAX_QUESTIONS, MAX_TEXT_CHARS
from questions.lines import Block, LineIndex
from questions.model import (
    Label,
    LabLink,
    Param,
    Question,
    RoundedFormula,
    Step,
    Topic,
    Value,
)
from questions.problems import Problem


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
    except UnicodeDecodeError as exc:
        parsed = ParsedFile(path, LineIndex(""))
        utf16 = content.startswith((b"\xff\xfe", b"\xfe\xff"))
        parsed.problems.append(Problem(
            path, content.count(b"\n", 0, exc.start) + 1, "file",
            "not UTF-8: " + ("a UTF-16 file (its byte-order mark); " if utf16 else
                             f"byte {content[exc.start]:#04x} at offset {exc.start:,}; ")
            + "save the file as UTF-8"))
        return parsed
    except OSError as exc:
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
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        rows = text.splitlines() or [""]
        deep = 1 + max(range(len(rows)), key=lambda n: rows[n].count("[") + rows[n].count("{"))
        parsed.problems.append(Problem(path, deep, "toml", (
            "not valid TOML here: arrays or inline tables nested too deep for the parser "
            "(a question file needs a few levels)")))
        return parsed
    for key in sorted(set(data) - {"topic", "question"}):
        parsed.problems.append(
            Problem(path, 1, key, "unknown top-level key (expected [topic] and [[question]])")
        )
    parsed.topic = (_topic(parsed, data.get("topic"))
                    if _printable(parsed, data.get("topic"), parsed.index.topic, "topic") else None)
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
        label = raw.get("id") if isinstance(raw, dict) else None
        if not _printable(parsed, raw, block, label if isinstance(label, str) else
                          f"question[{i + 1}]"):
            continue
        question = _QuestionReader(parsed, block, raw, i, topic_id, exercises, sims).read()
        if question is not None:
            parsed.questions.append(question)
    return parsed


# Characters a pack's text may not hold: C0/C1 controls (ESC starts the terminal's escape
# sequences: colours, clearing the screen, setting the clipboard) but newline and tab, and the
# bidirectional overrides and isolates, which make text read other than it is stored.
_BIDI = frozenset(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def _printable(parsed: ParsedFile, raw: object, block: Block | None, label: str) -> bool:
    """No string in `raw` (a question's table, or the [topic]) holds a terminal control or
    bidirectional character; each one that does is a problem at its field."""
    found = list(_unprintable(raw, ""))
    for field_path, char in found:
        name = unicodedata.name(char, "a control character")
        parsed.problem(block, field_path, label, (
            f"holds U+{ord(char):04X} ({name}): a terminal control or bidirectional "
            "character would reach the learner's terminal as is; remove it"))
    return not found


def _unprintable(value: object, path: str) -> Iterator[tuple[str, str]]:
    """(field path, first bad character) for each string under `value` that holds one."""
    if isinstance(value, str):
        bad = next((c for c in value if c in _BIDI
                    or (unicodedata.category(c) == "Cc" and c not in "\n\t")), None)
        if bad is not None:
            yield path, bad
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _unprintable(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _unprintable(item, f"{path}[{i}]")


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


@dataclass(frozen=True)
class _Values:
    """A question's values as read, and the names its texts and formulas may use."""

    params: dict[str, Param]
    cases: list[dict[str, Value]]
    derived: dict[str, Formula]
    labels: dict[str, Label]
    known: set[str]  # drawn, case and derived names (a derived value that failed too)
    labels_declared: set[str]
    complete: bool  # every param and label declared was read (what the prompt shows can be
    # checked)


# Header fields checked by a rule each: (key, valid, message with {} for the value given).
_HEADER_RULES: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("kind", lambda v: v in KINDS, "kind must be \"mcq\", \"numeric\" or \"case\", got {!r}"),
    ("difficulty", lambda v: _is_int(v) and 1 <= v <= 5,
     "difficulty must be a whole number 1..5, got {!r}"),
)


class _QuestionReader(AnswerReader):
    """Reads one [[question]] table; `ok` turns false on the first problem it records."""

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

    def read(self) -> Question | None:
        """The question, or None when any problem was recorded. The steps run in the order
        their problems are reported: the id and sizes, the header fields, the values, the
        kind's answer, then the texts (placeholders, steps, what the prompt shows)."""
        qid = self.raw.get("id")
        if not self._declare(qid):
            return None
        self._check_header(qid)
        lab = self._lab(self.raw.get("lab"))
        sim = self._sim()
        related = self._related(qid)
        sources = self._text_list("sources")
        prompt, explanation = self._text("prompt"), self._text("explanation")
        values = self._values()
        kind = self.raw.get("kind")
        answer = _ANSWER_READERS.get(kind, _QuestionReader._no_answer)(self, values.known,
                                                                       explanation)
        texts_ok = self._check_texts(kind, prompt, explanation, answer.get("choices", ()),
                                     values)
        steps: tuple[Step, ...] = ()
        if kind == "case" and isinstance(qid, str):
            steps = self._steps(qid, prompt, values.known, values.labels_declared, values.params,
                                values.cases, values.derived, values.labels, lab,
                                self.raw.get("difficulty"))
        formula = answer.get("answer")
        if formula is not None and prompt and texts_ok and values.complete:
            self._check_visible(prompt, formula, values.params, values.cases, values.derived,
                                values.labels)
        if not self.ok or not isinstance(qid, str) or kind not in KINDS:
            return None
        difficulty = self.raw.get("difficulty")
        return Question(
            id=qid, topic=self.topic_id, kind=kind, prompt=prompt, explanation=explanation,
            lab=lab, difficulty=difficulty if _is_int(difficulty) else 0, source=self.parsed.path,
            line=self.block.main.line if self.block else 1, sim=sim, related=tuple(related),
            sources=tuple(sources), params=values.params, cases=tuple(values.cases),
            derived=values.derived, labels=values.labels, steps=steps, **answer,
        )

    def _declare(self, qid: object) -> bool:
        """Check the id and every size limit; record a valid id as declared. False when the
        table is refused before anything else is read (an id or a field over its limit)."""
        valid = isinstance(qid, str) and bool(ID_PATTERN.match(qid))
        if isinstance(qid, str) and len(qid) > MAX_ID_CHARS:
            self.fail("id", _too_long("id", len(qid), MAX_ID_CHARS))
            return False
        if valid:
            self.label = str(qid)
        if not self._sizes_ok():  # before any parsing or rendering: refused quickly
            if valid:
                self.parsed.declared.append((str(qid), self.parsed.index.locate(self.block, "id")))
            return False
        if not valid:
            self.fail("id", "id must be a stable kebab-case text id, e.g. \"kv-cache-001\"")
            return True
        self.parsed.declared.append((str(qid), self.parsed.index.locate(self.block, "id")))
        if self.block is not None:
            self.parsed.blocks.setdefault(str(qid), self.block)
        return True

    def _check_header(self, qid: object) -> None:
        """Unknown keys, a topic other than the file's, and the fields of `_HEADER_RULES`."""
        raw = self.raw
        for key in sorted(set(raw) - QUESTION_KEYS):
            self.fail(key, f"unknown key (known: {', '.join(sorted(QUESTION_KEYS))})")
        if "topic" in raw and raw["topic"] != self.topic_id:
            self.fail("topic", f"topic {raw['topic']!r} differs from the file's [topic] id "
                      f"{self.topic_id!r} (leave it out: the file's topic applies)")
        for key, ok, message in _HEADER_RULES:
            if not ok(raw.get(key)):
                self.fail(key, message.format(raw.get(key)))

    def _sim(self) -> str | None:
        sim = self.raw.get("sim")
        if sim is not None and self.sims is None and (not isinstance(sim, str) or not sim):
            self.fail("sim", f"sim must be a sim's name, got {sim!r}")
        elif sim is not None and self.sims is not None and sim not in self.sims:
            self.fail("sim", f"sim must be one of {', '.join(sorted(self.sims))}, got {sim!r}")
        return sim

    def _related(self, qid: object) -> list[str]:
        related = self._text_list("related")
        for other in related:
            if not ID_PATTERN.match(other):
                self.fail("related", f"related id {other!r} is not a valid id")
            elif other == qid:
                self.fail("related", "a question cannot be related to itself")
        return related

    def _values(self) -> _Values:
        """params, cases, derived and labels, and the names a text or formula may use."""
        raw = self.raw
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
        raw_derived, raw_labels = raw.get("derived"), raw.get("labels")
        known = drawn_names | set(derived)
        if isinstance(raw_derived, dict):
            known |= set(raw_derived)
        labels_declared = set(raw_labels) if isinstance(raw_labels, dict) else set(labels)
        return _Values(params, cases, derived, labels, known, labels_declared,
                       complete=len(labels) == len(labels_declared) and
                       len(params) == len(declared))

    def _numeric_answer(self, known: set[str], explanation: str) -> dict[str, Any]:
        unit, tolerance, answer, rounding = self._numeric(known)
        return {"unit": unit, "tolerance": tolerance, "answer": answer, "round": rounding,
                "mistakes": self._mistakes(known)}

    def _mcq_answer(self, known: set[str], explanation: str) -> dict[str, Any]:
        choices, correct = self._mcq()
        why = self._why(choices, correct)
        if self.parsed.strict and explanation and not MISCONCEPTION.search(explanation):
            self.fail("explanation", "an MCQ explanation names the misconception behind the "
                      "most tempting wrong choice: add \"Misconception: ...\" (the choice's "
                      "why says it in one line; the explanation says why it fails)")
        return {"choices": choices, "correct": correct, "why": why}

    def _no_answer(self, known: set[str], explanation: str) -> dict[str, Any]:
        """A case (its steps hold the answers) or an unknown kind (already reported)."""
        return {}

    def _check_texts(self, kind: object, prompt: str, explanation: str,
                     choices: tuple[str, ...], values: _Values) -> bool:
        """Steps only in a case, no {answer} in the prompt, and every placeholder of the
        prompt, the explanation and the choices names a value; True when the placeholders are
        all known."""
        if kind != "case" and "step" in self.raw:
            self.fail("step", "steps belong to case studies (kind = \"case\")")
        if "{answer" in prompt and "answer" in _placeholder_names(prompt):
            self.fail("prompt", "the prompt cannot show {answer}: that gives the answer away")
        text_names = values.known | values.labels_declared | {"answer"}
        step_names: set[str] = set()
        if kind == "case":
            text_names = values.known | values.labels_declared  # no single answer to show
            step_names = self._step_names()
        texts_ok = True
        for key, text in (("prompt", prompt), ("explanation", explanation),
                          *((f"choices[{i}]", c) for i, c in enumerate(choices))):
            names = text_names | step_names if key == "explanation" else text_names
            texts_ok &= self._check_placeholders(key.split("[")[0], text, names)
        return texts_ok

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


# What each kind reads for its answer (fields of `Question`); a case's answers are its steps.
_ANSWER_READERS: dict[object, Callable[[_QuestionReader, set[str], str], dict[str, Any]]] = {
    "numeric": _QuestionReader._numeric_answer,
    "mcq": _QuestionReader._mcq_answer,
}
