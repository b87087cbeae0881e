"""Reading what a question is answered with: a numeric answer (unit, rounding, tolerance) and
its named mistakes, or an MCQ's choices, correct index and per-choice whys (the strictness rules
that a learner's own pack may skip live here)."""

from __future__ import annotations

import math

from questions.fields import (
    MAX_REL_TOLERANCE,
    MISTAKE_ID,
    MISTAKE_KEYS,
    _is_int,
    _is_number,
)
from questions.formula import Formula
from questions.model import ROUNDINGS, Mistake, Rounding, Tolerance
from questions.units import COUNTED_UNITS, is_known_unit
from questions.value_fields import ValueReader


class AnswerReader(ValueReader):
    """Checks the numeric or MCQ half of a question; `MISTAKE_TABLE` names the table in
    messages (a case's steps override it)."""

    MISTAKE_TABLE = "question.mistake"

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
            # packs written before `round` existed still import: rounded to the nearest whole
            # number, with a warning (a refusal in the built-in bank and under --strict)
            self.fail_or_warn("round", f"{unit} are counted: add round = \"up\" (capacity that "
                              "must cover demand), \"down\" (what fits) or \"nearest\""
                              + ("" if self.parsed.strict else
                                 "; until then the answer is rounded to the nearest"))
            if not self.parsed.strict:
                rounding = "nearest"
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

