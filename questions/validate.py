"""Whole-bank validation: schema (via the loader), cross-file rules, and many seeded draws.

Used by `dojo questions check` (many draws) and by the bank loader (a few draws, so the app
starts fast). Every problem is a `Problem` naming file:line:field.
"""

from __future__ import annotations

import itertools
import math
import re
import string
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from questions.answers import check_answer
from questions.fields import ParsedFile
from questions.formula import FormulaError
from questions.givens import trace_givens
from questions.loader import parse_file
from questions.model import DrawError, Instance, Question, Topic, Value, round_count
from questions.problems import Problem
from questions.render import RenderError, format_value, render
from questions.units import format_quantity

CHECK_DRAWS = 200  # random draws per parameterised question for `dojo questions check`
LOAD_DRAWS = 8  # ... when the app loads the bank
MAX_CORNERS = 256  # all-extremes combinations tried (2^8 parameters' worth), then one-at-a-time
# A named mistake may coincide with the answer (land within its tolerance) on at most this share
# of the points tried (corners + draws, counted as at least CHECK_DRAWS), and never for a question
# without parameters. Such a draw cannot tell the mistake from the answer, so it is not diagnosed.
RARE_COINCIDENCE = 0.02


@dataclass
class Report:
    topics: dict[str, Topic] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)  # lenient files: what strict refuses

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_files(
    paths: Sequence[Path],
    *,
    context: Sequence[Path] = (),
    draws: int = CHECK_DRAWS,
    builtin_dir: Path | None = None,
    exercises: Mapping[str, int] | None = None,
    sims: Collection[str] | None = None,
    strict: bool = False,
) -> Report:
    """Validate `paths`; `context` files supply ids for related links and duplicate checks but
    their own problems are not reported. Files under `builtin_dir` must have topic id == stem
    and are always `strict`: every numeric question names its mistakes, every MCQ its whys and
    the misconception in its explanation. Other files (a learner's pack) get warnings for
    missing mistakes/whys unless `strict`. Lab links are checked against `exercises` (id ->
    highest level) and `sims` when given: questions never imports lab, so the caller supplies
    lab's catalogue (`trainer.core.catalogue.lab_links()`); None checks only their shape."""
    targets = [Path(p) for p in paths]
    resolved = {p.resolve() for p in targets}
    extra = [Path(p) for p in context if Path(p).resolve() not in resolved]
    builtin = builtin_dir.resolve() if builtin_dir is not None else None

    def strict_for(path: Path) -> bool:
        return strict or path.resolve().parent == builtin

    ctx_files = [parse_file(p, exercises, sims, strict=False) for p in extra]
    files = [parse_file(p, exercises, sims, strict=strict_for(p)) for p in targets]
    report = Report()
    # ids declared by context files come first: a pack cannot take over a built-in id or topic
    seen_ids: dict[str, tuple[Path, int]] = {}
    seen_topics: dict[str, Path] = {}
    for parsed in ctx_files:
        for qid, line in parsed.declared:
            seen_ids.setdefault(qid, (parsed.path, line))
        if parsed.topic:
            seen_topics.setdefault(parsed.topic.id, parsed.path)
    rejected: set[tuple[Path, str]] = set()
    for parsed in files:
        report.problems.extend(parsed.problems)
        report.warnings.extend(parsed.warnings)
        _topic_problems(parsed, builtin, seen_topics, report)
        rejected |= _duplicate_ids(parsed, seen_ids, report)
    for parsed in files:
        for question in parsed.questions:
            if (parsed.path, question.id) not in rejected and question.topic in report.topics:
                _check_question(parsed, question, seen_ids, draws, report)
    report.problems.sort(key=lambda p: (str(p.file), p.line, p.field))
    report.warnings.sort(key=lambda p: (str(p.file), p.line, p.field))
    return report


def _topic_problems(parsed: ParsedFile, builtin: Path | None, seen_topics: dict[str, Path],
                    report: Report) -> None:
    """A built-in file's topic id is its file name, and no two files define one topic; the
    first definition is the report's."""
    topic = parsed.topic
    if topic is None:
        return
    if builtin is not None and parsed.path.resolve().parent == builtin \
            and topic.id != parsed.path.stem:
        report.problems.append(Problem(parsed.path, topic.line, "topic.id",
                                       f"topic id {topic.id!r} must equal the file name "
                                       f"{parsed.path.stem!r} in the built-in bank"))
    if topic.id in seen_topics:
        report.problems.append(Problem(parsed.path, topic.line, "topic.id",
                                       f"topic {topic.id!r} is already defined in "
                                       f"{seen_topics[topic.id]}"))
    else:
        seen_topics[topic.id] = parsed.path
        report.topics[topic.id] = topic


def _duplicate_ids(parsed: ParsedFile, seen_ids: dict[str, tuple[Path, int]],
                   report: Report) -> set[tuple[Path, str]]:
    """Report each id the file declares that an earlier file (or line) declared; returns
    those (file, id) pairs, which are left out of the bank."""
    rejected: set[tuple[Path, str]] = set()
    for qid, line in parsed.declared:
        if qid in seen_ids:
            first_path, first_line = seen_ids[qid]
            report.problems.append(Problem(parsed.path, line, f"{qid}.id",
                                           f"duplicate id {qid!r} (first at "
                                           f"{first_path}:{first_line})"))
            rejected.add((parsed.path, qid))
        else:
            seen_ids[qid] = (parsed.path, line)
    return rejected


def _check_question(parsed: ParsedFile, question: Question,
                    seen_ids: Mapping[str, object], draws: int, report: Report) -> None:
    """The question's draw-time problems into the report; it joins the bank without any."""
    advice: list[tuple[str, str]] = []
    problems = [Problem(parsed.path, parsed.locate(question.id, where),
                        f"{question.id}.{where}", message)
                for where, message in _question_problems(question, seen_ids, draws, advice)]
    advised = [Problem(parsed.path, parsed.locate(question.id, where),
                       f"{question.id}.{where}", message) for where, message in advice]
    if parsed.strict:
        problems.extend(advised)
    else:  # a learner's pack: the answer-checking advice is a warning, not a refusal
        report.warnings.extend(advised)
    report.problems.extend(problems)
    if not problems:
        report.questions.append(question)


# A graded part: (prefix of its problems, e.g. "step[1].", the question graded, step index).
Part = tuple[str, Question, int | None]


@dataclass
class _Tally:
    """What the draws find that is reported after all of them: one piece of advice per graded
    part, and how often each named mistake landed within the answer's tolerance (with an
    example)."""

    advised: dict[str, tuple[str, str]] = field(default_factory=dict)
    coincide: dict[tuple[str, str], int] = field(default_factory=dict)
    example: dict[tuple[str, str], str] = field(default_factory=dict)
    points: int = 0


def _question_problems(question: Question, known_ids: Mapping[str, object],
                       draws: int, advice: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The question's problems; `advice` collects the rules that keep a right answer from
    being graded wrong (printed answer, precision, % as a fraction), at most one per graded
    part, which a strict file treats as problems and a learner's pack as warnings."""
    found = [("related", f"related id {other!r} does not exist")
             for other in question.related if other not in known_ids]
    # what is graded: the question itself, or each step of a case (its problems at step[i].)
    graded: list[Part] = [("", question, None)]
    explained = {"": question.explanation}
    if question.kind == "case":
        graded = [(f"step[{k}].", step.question, k) for k, step in enumerate(question.steps)]
        explained = {f"step[{k}].": step.explanation for k, step in enumerate(question.steps)}
    tally = _Tally(coincide={(prefix, m.id): 0 for prefix, part, _ in graded
                             for m in part.mistakes})
    for prefix, part, _ in graded:
        problem = _percent_fraction_problem(part, explained[prefix])
        if problem:
            tally.advised[prefix] = (prefix + problem[0], problem[1])
    given = {prefix: _givens(part) for prefix, part, _ in graded}
    # the per-draw advice grades the printed answer on every draw: `check` and `import` run
    # it; the app's quick load (a few draws) leaves it to them and to the bank's tests
    full = draws >= CHECK_DRAWS // 4
    for values, seed in _draw_plan(question, draws):
        try:
            instance = question.instance(values, seed=seed) if values is not None \
                else question.draw(seed, redraws=0)
        except DrawError as exc:
            shown = _describe(values if values is not None else question.draw_values(seed))
            return [*found, (exc.field, f"{exc.message} (with {shown})")]
        tally.points += 1
        for prefix, part, k in graded:
            problem = _part_problem(instance, prefix, part, k, given[prefix],
                                    explained[prefix] if full else None, tally)
            if problem:
                return [*found, problem]
    found.extend(_coincidence_problems(question, graded, tally))
    advice.extend(tally.advised.values())
    return found


def _part_problem(instance: Instance, prefix: str, part: Question, k: int | None,
                  given: frozenset[str], explanation: str | None,
                  tally: _Tally) -> tuple[str, str] | None:
    """One draw of one graded part: its first problem, or None; the advice (when
    `explanation` is given: a full check) and the mistakes' coincidences go to `tally`."""
    question = instance.question
    graded = instance if k is None else instance.steps[k]
    problem = _instance_problem(part, graded.values, graded.answer, graded.choices) or \
        _shown_numbers_problem(part, given, graded.values, graded.answer)
    if explanation is not None and prefix not in tally.advised:
        advisory = _printed_answer_problem(graded, explanation) or _precision_problem(graded)
        if advisory:
            shown = _describe(instance.values, question)
            tally.advised[prefix] = (prefix + advisory[0], f"{advisory[1]} (with {shown})")
    if problem:
        return prefix + problem[0], f"{problem[1]} (with {_describe(instance.values, question)})"
    for i, mistake in enumerate(part.mistakes):
        try:
            value = mistake.formula.evaluate(graded.values)
        except FormulaError as exc:
            return (f"{prefix}mistake[{i}].formula",
                    f"{exc} (with {_describe(instance.values, question)})")
        if part.round is not None:
            value = round_count(value, part.round)
        answer = graded.answer
        assert answer is not None and part.tolerance is not None
        if part.tolerance.accepts(answer, value):
            tally.coincide[(prefix, mistake.id)] += 1
            tally.example.setdefault((prefix, mistake.id), f"{value:.6g} vs the answer "
                                     f"{answer:.6g} with {_describe(instance.values, question)}")
    return None


def _coincidence_problems(question: Question, graded: list[Part],
                          tally: _Tally) -> list[tuple[str, str]]:
    """Each named mistake accepted as right on more than RARE_COINCIDENCE of the points."""
    allowed = int(RARE_COINCIDENCE * max(tally.points, CHECK_DRAWS)) \
        if question.parameterised else 0
    found: list[tuple[str, str]] = []
    for prefix, part, _ in graded:
        for i, mistake in enumerate(part.mistakes):
            count = tally.coincide[(prefix, mistake.id)]
            if count > allowed:
                assert part.tolerance is not None
                found.append((f"{prefix}mistake[{i}].formula", (
                    f"mistake {mistake.id!r} is accepted as right on {count} of "
                    f"{tally.points} draws (allowed: {allowed}), e.g. "
                    f"{tally.example[(prefix, mistake.id)]}: tighten the tolerance "
                    f"({part.tolerance.describe()}) or reshape the question so the mistake "
                    "lands outside it")))
    return found


def _instance_problem(question: Question, values: Mapping[str, Value], answer: float | None,
                      choices: Sequence[str]) -> tuple[str, str] | None:
    for name in question.derived:
        value = values[name]
        if isinstance(value, float) and not math.isfinite(value):
            return f"derived.{name}", f"not a finite number: {value}"
    if question.kind == "numeric":
        assert answer is not None and question.tolerance is not None
        if not math.isfinite(answer):
            return "answer", f"not a finite number: {answer}"
        tol = question.tolerance
        if tol.abs is not None and tol.rel is None and answer != 0 and tol.abs >= abs(answer):
            return "tolerance.abs", (f"abs tolerance {tol.abs:g} is not smaller than the answer "
                                     f"{answer:g}: 0 would be accepted")
    if question.kind == "mcq":
        folded = [" ".join(c.split()).casefold() for c in choices]
        if len(set(folded)) != len(folded):
            return "choices", "two choices render the same text"
    return None


_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)


def printed_answers(template: str, instance: Instance) -> list[str]:
    """What an explanation prints as the answer, as a learner would copy it: each bold span
    that holds `{answer...}` (e.g. `**{answer:.1f} s**`), rendered for this draw."""
    spans = [span for span in _BOLD.findall(template) if "{answer" in span]
    try:
        return [" ".join(render(span, instance.values).split()) for span in spans]
    except RenderError:
        return []  # the explanation's own rendering is checked (and reported) elsewhere


def _printed_answer_problem(instance: Instance, template: str) -> tuple[str, str] | None:
    """The explanation's own printed answer must be accepted by the checker: a learner who
    types what the explanation says (`**40.0%**`, `**10.3 s**`) must not be graded wrong."""
    question = instance.question
    if question.kind != "numeric" or instance.answer is None:
        return None
    for text in printed_answers(template, instance):
        outcome = check_answer(instance, text)
        if outcome.graded and outcome.correct:
            continue
        why = outcome.message if outcome.reask else \
            f"graded wrong{': ' + outcome.hint if outcome.hint else ''}"
        return "explanation", (f"the explanation prints the answer as {text!r}, which the checker "
                               f"does not accept ({why}; the answer is "
                               f"{format_quantity(instance.answer, question.unit)}): print it "
                               "with the digits the tolerance needs, in the question's unit")
    return None


# how a prompt asks for more digits than a person types by default ("to the millisecond",
# "to two decimals", "3 significant figures")
_PRECISION_ASKED = re.compile(r"decimal|significant|d\.p\.|\bexact|to the (?:nearest|milli|micro|"
                              r"second|tenth|hundredth|thousandth)", re.IGNORECASE)
TYPED_DIGITS = 3  # significant figures a learner types unless told otherwise


def _precision_problem(instance: Instance) -> tuple[str, str] | None:
    """A tolerance tighter than the 3 significant figures a person types must say the precision
    it asks: "10.3" for 10.275 s is otherwise graded wrong (and may even match a mistake)."""
    question, answer = instance.question, instance.answer
    if question.kind != "numeric" or answer is None or question.round is not None or \
            question.tolerance is None or answer == 0:
        return None
    typed = float(f"{answer:.{TYPED_DIGITS}g}")
    if question.tolerance.accepts(answer, typed) or _PRECISION_ASKED.search(instance.prompt):
        return None
    return "tolerance", (f"{format_quantity(typed, question.unit)} ({TYPED_DIGITS} significant "
                         f"figures of {format_quantity(answer, question.unit)}) is outside "
                         f"{question.tolerance.describe()}: say the precision asked in the prompt "
                         "(\"to the millisecond\", \"to two decimals\") or widen the tolerance")


_PERCENT_SPEC = re.compile(r"\{answer:[^}]*%\}")


def _percent_fraction_problem(question: Question, template: str) -> tuple[str, str] | None:
    """A `%` answer stored as a fraction (0.4 printed as `{answer:.0%}` = "40%") grades the
    right "40%" as 100x off: a `%` answer is stored in percent (40)."""
    if question.kind == "numeric" and question.unit == "%" and _PERCENT_SPEC.search(template):
        return "answer", ("unit is '%' but the explanation prints {answer:…%}, i.e. the answer "
                          "is stored as a fraction: store it in percent (× 100) and print it "
                          "with a plain spec such as {answer:.1f}%")
    return None


def _shown_numbers_problem(question: Question, given: frozenset[str], values: Mapping[str, Value],
                           answer: float | None) -> tuple[str, str] | None:
    """A learner computes with the numbers as the prompt displays them ({rate:.1f} shows 1.3 of
    1.3068): the answer they get that way must still be accepted."""
    if question.kind != "numeric" or answer is None or question.tolerance is None or not given:
        return None
    shown = _as_shown(question, given, values)
    off = {n: v for n, (v, _) in shown.items() if not math.isclose(v, float(values[n]),
                                                                     rel_tol=1e-9, abs_tol=1e-12)}
    if not off:
        return None
    tolerance = question.tolerance
    for blame in [*sorted(off), None]:
        overrides = {blame: off[blame]} if blame is not None else off
        try:
            result = question.answer_with(values, overrides)
        except FormulaError as exc:
            result, failure = math.nan, str(exc)
        else:
            failure = ""
        if failure or not tolerance.accepts(answer, result):
            where = ("prompt" if blame is None else f"params.{blame}" if blame in question.params
                     else f"derived.{blame}" if blame in question.derived else "cases")
            names = [blame] if blame is not None else sorted(off)
            as_shown = ", ".join(f"{n} = {shown[n][1]}" for n in names)
            outcome = f"fails ({failure})" if failure else f"gives {result:.6g}"
            return where, (f"computing with the numbers as shown ({as_shown}) {outcome}, not "
                           f"within {tolerance.describe()} of the answer {answer:.6g}: show more "
                           "digits or give the range a step")
    return None


def _as_shown(question: Question, given: frozenset[str],
              values: Mapping[str, Value]) -> dict[str, tuple[float, str]]:
    """Each given number as the prompt displays it (number read back, text), the display
    farthest from the value when the prompt shows it twice."""
    shown: dict[str, tuple[float, str]] = {}
    for name, spec in _prompt_fields(question.prompt):
        value = values.get(name)
        if name not in given or isinstance(value, str) or value is None:
            continue
        text = format_value(value, spec, name)
        number = _read_back(text)
        if number is None:
            continue
        if name not in shown or abs(number - value) > abs(shown[name][0] - value):
            shown[name] = (number, text)
    return shown


def _read_back(text: str) -> float | None:
    number = text.replace(",", "").replace("_", "").strip()
    scale = 100.0 if number.endswith("%") else 1.0
    try:
        return float(number.rstrip("%")) / scale
    except ValueError:
        return None


def _givens(question: Question) -> frozenset[str]:
    if question.answer is None:
        return frozenset()
    shown = [name for name, _ in _prompt_fields(question.prompt)]
    drawn = set(question.params) | {k for case in question.cases for k in case}
    labels = {name: label.source for name, label in question.labels.items()}
    return trace_givens(question.answer, shown, drawn, question.derived, labels).given


def _prompt_fields(prompt: str) -> list[tuple[str, str]]:
    return [(name, spec or "") for _, name, spec, _ in string.Formatter().parse(prompt)
            if name is not None]


def _draw_plan(question: Question,
               draws: int) -> Iterable[tuple[dict[str, Value] | None, int]]:
    """Extremes first (every corner of the parameter box when small, else one-at-a-time; a quick
    load only tries corners for 1-2 parameters), then random seeded draws; a question without
    parameters needs one draw."""
    if not question.parameterised:
        yield None, 0
        return
    params = question.params
    cases = question.cases or ({},)
    lows = {n: p.extremes()[0] for n, p in params.items()}
    highs = {n: p.extremes()[1] for n, p in params.items()}
    names = list(params)
    for case in cases:
        if 2 ** len(names) <= (MAX_CORNERS if draws >= CHECK_DRAWS // 4 else 4):
            for corner in itertools.product((0, 1), repeat=len(names)):
                values: dict[str, Value] = dict(case)
                values.update({n: (highs if bit else lows)[n] for n, bit in zip(names, corner,
                                                                             strict=True)})
                yield values, 0
        else:
            yield {**case, **lows}, 0
            yield {**case, **highs}, 0
            for name in names:
                yield {**case, **lows, name: highs[name]}, 0
                yield {**case, **highs, name: lows[name]}, 0
    for seed in range(draws):
        yield None, seed


def _describe(values: Mapping[str, Value], question: Question | None = None) -> str:
    keys = list(values)
    if question is not None:
        keys = [k for k in keys if k in question.params or
                any(k in case for case in question.cases)]
    if not keys:
        return "no parameters"
    return ", ".join(f"{k}={values[k]!r}" for k in keys)
