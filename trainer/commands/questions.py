"""`dojo questions check|import|list`: validate, add and browse the question bank."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from questions.wording import plural

if TYPE_CHECKING:
    from questions.model import Instance
    from questions.problems import Problem


@click.group("questions")
def questions() -> None:
    """The question bank: check files, import your own pack, list what is there."""


@questions.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--draws",
    default=200,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Random draws per parameterised question (the extremes are always tried).",
)
@click.option("--strict", is_flag=True,
              help="Hold packs to the built-in bank's rules: every numeric question names its "
                   "mistakes, every MCQ its whys and the misconception in its explanation.")
def check(paths: tuple[Path, ...], draws: int, strict: bool) -> None:
    """Validate the built-in bank and your packs, or the given files/folders.

    Every problem is printed as FILE:LINE:FIELD: message; the exit status is 1 if there is any.
    A pack's missing mistakes and whys are warnings (`--strict`: problems); the built-in bank
    is always strict.
    """
    from questions.bank import BUILTIN_DIR, builtin_files, expand, pack_files
    from questions.validate import validate_files
    from trainer.core.catalogue import lab_links

    if paths:
        files = expand(paths)
        # Leave out what checking these files stands for: the files themselves and an imported
        # pack of the same name (`import --replace` replaces it), as `import` does.
        checked = {f.resolve() for f in files}
        names = {f.name for f in files}
        context = [f for f in builtin_files() if f.resolve() not in checked]
        context += [f for f in pack_files() if f.resolve() not in checked and f.name not in names]
    else:
        files, context = builtin_files() + pack_files(), []
    if not files:
        if paths:  # a folder without .toml files: what was meant is not there
            click.echo(f"{', '.join(map(str, paths))}: no question files (*.toml) in it",
                       err=True)
            raise SystemExit(1)
        click.echo(f"no question files to check (in {BUILTIN_DIR})")
        return
    report = validate_files(files, context=context, draws=draws, builtin_dir=BUILTIN_DIR,
                            strict=strict, **lab_links())
    for problem in report.problems:
        click.echo(str(problem))
    _echo_warnings(report.warnings)
    summary = (
        f"{plural(len(files), 'file')}: {plural(len(report.questions), 'valid question')} in "
        f"{plural(len(report.topics), 'topic')}"
    ) + (f", {plural(len(report.warnings), 'warning')}" if report.warnings else "")
    if report.problems:
        click.echo(f"{summary}; {plural(len(report.problems), 'problem')}", err=True)
        raise SystemExit(1)
    click.echo(f"{summary}; all checks passed")


@questions.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Replace an imported pack of the same file name.")
def import_(file: Path, replace: bool) -> None:
    """Validate FILE (a topic file in the bank's format) and add it to your packs."""
    from questions.bank import builtin_files, pack_files, packs_dir
    from questions.validate import validate_files
    from trainer.core.catalogue import lab_links

    if file.suffix != ".toml":
        raise click.ClickException(f"{file}: a pack is a .toml file")
    dest = packs_dir() / file.name
    content = file.read_bytes()
    if dest.exists():
        if dest.read_bytes() == content:
            click.echo(f"{file.name} is already imported, unchanged ({dest})")
            return
        if not replace:
            raise click.ClickException(
                f"a different pack named {file.name} is already imported ({dest}); "
                "rename your file or pass --replace"
            )
    others = [p for p in pack_files() if p.name != file.name]
    report = validate_files([file], context=builtin_files() + others, **lab_links())
    for problem in report.problems:
        click.echo(str(problem))
    _echo_warnings(report.warnings)
    if report.problems:
        raise click.ClickException(
            f"not imported: {plural(len(report.problems), 'problem')} in {file}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, suffix=".part", delete=False) as tmp:
        tmp.write(content)
    os.replace(tmp.name, dest)  # atomic: a crash never leaves half a pack behind
    topics = ", ".join(sorted(report.topics)) or "-"
    warned = f", {plural(len(report.warnings), 'warning')}" if report.warnings else ""
    click.echo(f"imported {plural(len(report.questions), 'question')} (topic {topics}){warned} "
               f"into {dest}")


def _echo_warnings(warnings: list[Problem]) -> None:
    """One line per rule a learner's pack skipped: it loads, with generic hints there."""
    for warning in warnings:
        click.echo(f"{warning.file}:{warning.line}:{warning.field}: warning: {warning.message}")


@questions.command("show")
@click.argument("question_id")
@click.option("--seed", default=0, show_default=True, type=int, help="Which draw to show.")
@click.option("--answer", "typed", multiple=True,
              help="Also grade this answer, as the app would (a case study: once per step, in "
                   "order).")
def show(question_id: str, seed: int, typed: tuple[str, ...]) -> None:
    """Render one question as a learner sees it (prompt, choices), then its answer.

    Markdown is rendered for a terminal and printed as plain text when piped. A case study shows
    its scenario and every step with its answer and explanation."""
    from trainer.core.bank import load_study_bank

    bank = load_study_bank()
    question = bank.get(question_id)
    if question is None:
        raise click.ClickException(f"no question {question_id!r} (see `dojo questions list --ids`)")
    if len(typed) > max(1, len(question.steps)):
        raise click.ClickException(f"{question_id} takes at most {max(1, len(question.steps))} "
                                   "--answer (one per step)")
    inst = question.draw(seed)
    out = _markdown_out()
    out(f"`{question.id}` [{question.topic}, {question.kind}, difficulty {question.difficulty}, "
        f"seed {seed}]")
    out(inst.prompt)
    if question.kind == "case":
        _show_case(out, inst, typed)
        return
    if inst.choices:
        out("\n".join(f"- {letter}) {choice}" for letter, choice in zip("ABCD", inst.choices,
                                                                          strict=False)))
    if typed:
        out(_graded(inst, typed[0]))
    out(f"**Answer:** {_answer_text(inst)}")
    out(inst.explanation)


def _show_case(out: Callable[[str], None], inst: Instance, typed: tuple[str, ...]) -> None:
    from questions.cases import revealed, suggested_grade

    right: list[bool] = []
    total = len(inst.steps)
    for k, step in enumerate(inst.steps):
        out(f"**Step {k + 1} of {total}.** {step.prompt}")
        if k < len(typed):
            out(_graded(step, typed[k]))
            from questions.answers import check_answer

            outcome = check_answer(step, typed[k])
            if outcome.graded:
                right.append(outcome.correct)
        out(f"**Answer:** {revealed(step)}")
        out(step.explanation)
    out(inst.explanation)
    if len(right) == total:
        out(f"**Suggested grade:** {suggested_grade(right)} "
            f"({sum(right)} of {plural(total, 'step')} right)")


def _answer_text(inst: Instance) -> str:
    from questions.units import format_quantity

    if inst.answer is not None:
        return format_quantity(inst.answer, inst.question.unit)
    return f"{inst.correct_letter}) {inst.choices[inst.correct_index or 0]}"


def _graded(inst: Instance, text: str) -> str:
    from questions.answers import check_answer

    outcome = check_answer(inst, text)
    if outcome.reask:
        return f"re-ask: {outcome.message}"
    verdict = "correct" if outcome.correct else "incorrect"
    detail = "; ".join(x for x in (outcome.diagnosis, outcome.hint, outcome.accepted) if x)
    return (f"{verdict}: you gave {outcome.given_display}, expected {outcome.expected_display}"
            + (f" ({detail})" if detail else ""))


def _markdown_out(stream: TextIO | None = None, *,
                  terminal: bool | None = None) -> Callable[[str], None]:
    """A printer of Markdown blocks: rendered with rich (bold, lists, colour) on a terminal, as
    plain text (markers removed, no escape codes) when piped or redirected."""
    from rich.console import Console
    from rich.markdown import Markdown

    file = stream if stream is not None else sys.stdout
    tty = file.isatty() if terminal is None else terminal
    if tty:
        console = Console(file=file, force_terminal=True, highlight=False, emoji=False)

        def rendered(text: str) -> None:
            console.print(Markdown(text.strip() or " "))
            console.print()

        return rendered

    def plain(text: str) -> None:
        buffer = io.StringIO()
        Console(file=buffer, force_terminal=False, color_system=None, width=100,
                highlight=False, emoji=False).print(Markdown(text.strip() or " "))
        lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
        file.write("\n".join(lines).strip("\n") + "\n\n")
        file.flush()

    return plain


@questions.command("list")
@click.option("--ids", is_flag=True, help="Also list every question id.")
def list_(ids: bool) -> None:
    """Print the bank by topic with question counts (case studies included)."""
    from trainer.core.bank import load_study_bank

    bank = load_study_bank()
    for topic_id in sorted(bank.topics):
        topic = bank.topics[topic_id]
        items = bank.by_topic(topic_id)
        numeric = sum(q.kind == "numeric" for q in items)
        cases = sum(q.kind == "case" for q in items)
        drawn = sum(q.parameterised for q in items)
        kinds = f"{numeric} numeric" + (f", {plural(cases, 'case study')}" if cases else "")
        click.echo(
            f"{topic_id:<28} {plural(len(items), 'question'):>13} ({kinds}, {drawn} "
            f"with drawn values)  {topic.title}"
        )
        if ids:
            for q in items:
                steps = f" {plural(len(q.steps), 'step')}" if q.steps else ""
                click.echo(
                    f"    {q.id:<32} {q.kind:<7} d{q.difficulty}  "
                    + (f"lab {q.lab.exercise} L{q.lab.level}" if q.lab else "no lab")
                    + steps
                )
    total_numeric = sum(q.kind == "numeric" for q in bank.questions)
    total_cases = sum(q.kind == "case" for q in bank.questions)
    click.echo(
        f"total: {plural(len(bank.questions), 'question')} in "
        f"{plural(len(bank.topics), 'topic')} "
        f"({total_numeric} numeric, {plural(total_cases, 'case study')})"
    )
    if bank.errors:
        click.echo(
            f"{plural(len(bank.errors), 'problem')} kept some questions out; run "
            "`dojo questions check` for details",
            err=True,
        )
