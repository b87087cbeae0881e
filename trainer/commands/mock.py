"""`dojo mock`: a mock interview round, headless. Each part is answered with its own command, and
the round lives in the database, so it can be left and resumed at any point (also in the app)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from trainer.commands.lab_common import DEVICE_CHOICE, DEVICE_HELP
from trainer.core.mock import DEFAULT_MINUTES


@contextmanager
def _services() -> Iterator[Any]:
    from trainer.core.errors import ClockError, StoreError
    from trainer.core.services import Services
    from trainer.core.store import pinned_now

    try:
        services = Services.open(now=pinned_now())
    except (StoreError, ClockError, ValueError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    try:
        why = services.cannot_save()
        if why is not None:
            click.echo(f"Error: no mock round: {why}", err=True)
            sys.exit(1)
        yield services
    finally:
        services.close()


def _open_round(services: Any) -> Any:
    from trainer.core.mock import resume

    mock = resume(services.store, services.now)
    if mock is None:
        click.echo("No mock round is running: start one with `dojo mock`.", err=True)
        sys.exit(2)
    return mock


def _show(mock: Any, services: Any) -> None:
    """The clock and the current part, with the command that answers it; the report at the end."""
    import time

    from trainer.core.mock import begin

    view = begin(mock, services)
    if view is None:
        _print_report(mock, services, as_json=False)
        return
    click.echo(f"Mock round #{mock.round_id} · {mock.clock(time.time())}")
    click.echo(view.title)
    click.echo("")
    click.echo(view.text.replace("**", ""))
    if view.path:
        click.echo(f"\nFile: {view.path}")
        click.echo("When it is ready: dojo mock grade   (or: dojo mock skip)")
    else:
        click.echo(f"\nAnswer with: dojo mock answer …   ({view.how}; or: dojo mock skip)")


def _print_report(mock: Any, services: Any, *, as_json: bool) -> None:
    from trainer.core.mock import report

    rep = report(mock, services)
    if as_json:
        click.echo(json.dumps(rep.to_dict(), indent=1, ensure_ascii=False))
        return
    whole = int(rep.elapsed_s)
    click.echo(f"Mock round #{rep.round_id}: {rep.score:.0%} in {whole // 60}:{whole % 60:02d} "
               f"of {rep.minutes}:00")
    for part in rep.parts:
        secs = int(part.seconds)
        click.echo(f"  {part.name:<14} {part.score:>4.0%}  {secs // 60:>2}:{secs % 60:02d}"
                   f"  ({part.items} item{'s' if part.items != 1 else ''})")
    if rep.mistakes:
        click.echo("Mistakes:")
        for m in rep.mistakes:
            click.echo(f"  - {m}")
    if rep.study_next:
        click.echo("Study next:")
        for s in rep.study_next:
            click.echo(f"  - {s}")


def _after(feedback: Any, mock: Any, services: Any) -> None:
    for line in feedback.lines:
        click.echo(line)
    if feedback.reask:
        sys.exit(2)
    click.echo("")
    _show(mock, services)


@click.group(invoke_without_command=True)
@click.option("--minutes", type=click.IntRange(1, 600), default=DEFAULT_MINUTES,
              show_default=True, help="The round's clock (a new round only).")
@click.pass_context
def mock(ctx: click.Context, minutes: int) -> None:
    """A mock interview round on one clock, drawn from your weakest topics: four estimates, a
    sim decision, a system-design answer self-graded against a rubric, and a lab level from a
    blank stub (no hints). With no command: resume the round left open, or start one.

    \b
    Then: dojo mock answer TEXT   (a number; key=value dials; free text; rubric points)
          dojo mock grade         (the lab part)
          dojo mock skip | abandon | report [--json]
    Answers here rehearse: they never change your review schedule.
    """
    if ctx.invoked_subcommand is not None:
        return
    from trainer.core.mock import new_round, resume, resume_note

    with _services() as services:
        current = resume(services.store, services.now)
        if current is None:
            current = new_round(services, minutes)
            click.echo(f"New mock round: {minutes} minutes, from your weakest topics: "
                       + ", ".join(services.topic_title(t) for t in current.weakest[:3]) + ".")
        else:
            note = resume_note(current, services.day()).removesuffix(".")
            click.echo(f"{note} (`dojo mock abandon` ends it).")
        _show(current, services)


@mock.command()
@click.argument("text", nargs=-1, required=True)
def answer(text: tuple[str, ...]) -> None:
    """Answer the current part: exit 0 when taken, 2 when it must be typed again."""
    from trainer.core.mock import answer as answer_item

    with _services() as services:
        current = _open_round(services)
        _after(answer_item(current, " ".join(text), services), current, services)


@mock.command()
@click.option("--device", type=DEVICE_CHOICE, default="auto", show_default=True,
              help=DEVICE_HELP)
@click.option("--on", "on", metavar="HOST", help="Grade on this SSH host (default: the "
              "lab_host setting; `--on local` grades here).")
def grade(device: str, on: str | None) -> None:
    """Grade the lab part: a pass ends it and puts your own file back; a failure with time
    left on the round's clock keeps it open (exit 1): fix the file and grade again."""
    from trainer.core.mock import grade_lab
    from trainer.core.remote import RemoteError

    with _services() as services:
        current = _open_round(services)
        try:
            feedback = grade_lab(current, services, device=device, on=on)
        except (RemoteError, ValueError) as exc:
            raise click.ClickException(f"{exc} The lab part stays open.") from exc
        if feedback.reask and current.current is not None and current.current.kind == "lab":
            for line in feedback.lines:  # not passed yet: the part stays open
                click.echo(line)
            sys.exit(1)
        _after(feedback, current, services)


@mock.command()
def skip() -> None:
    """Give up the current part (it scores 0 and is named in the report)."""
    from trainer.core.mock import skip as skip_item

    with _services() as services:
        current = _open_round(services)
        _after(skip_item(current, services), current, services)


@mock.command()
def abandon() -> None:
    """End the round now; what is left scores 0."""
    from trainer.core.mock import abandon as abandon_round

    with _services() as services:
        current = _open_round(services)
        abandon_round(current, services)
        _print_report(current, services, as_json=False)


NO_ROUND = "No finished mock round yet: start one with `dojo mock`."


@mock.command("report")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--all", "every", is_flag=True, help="One line per finished round, oldest first.")
def report_cmd(as_json: bool, every: bool) -> None:
    """The latest finished round: score and time per part, mistakes, what to study next."""
    from trainer.core.mock import MockRound

    with _services() as services:
        rounds = services.store.mock_rounds()
        if every:
            rows = [{"round": rid, "finished": at.isoformat(), "score": round(score, 4)}
                    for rid, at, score, _ in rounds]
            if as_json:
                click.echo(json.dumps(rows, indent=1))
            for r in [] if as_json else rows:
                click.echo(f"#{r['round']}  {r['finished'][:16]}  {r['score']:.0%}")
            if not rows and not as_json:  # it printed nothing at all
                click.echo(NO_ROUND, err=True)
            return
        if not rounds:
            click.echo(NO_ROUND, err=True)
            sys.exit(2)
        rid, _, _, state = rounds[-1]
        _print_report(MockRound.from_state(state, rid), services, as_json=as_json)
