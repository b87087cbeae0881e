"""`dojo plan`: the interview date, the daily time budget, the pace and per-topic readiness."""

from __future__ import annotations

import datetime as dt
import json

import click

from trainer.commands.schedule import _open_store, _read

DEFAULT_MINUTES = 30


def _date(value: str) -> dt.date:
    from trainer.core.plan import parse_day

    try:
        return parse_day(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--interview") from None


@click.command()
@click.option("--interview", metavar="YYYY-MM-DD", help="Set the interview date.")
@click.option("--minutes", type=click.IntRange(1, 600), metavar="N",
              help=f"Minutes a day you can study (default {DEFAULT_MINUTES}).")
@click.option("--clear", is_flag=True, help="Remove the plan (the usual new-card limit again).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(interview: str | None, minutes: int | None, clear: bool, as_json: bool) -> None:
    """Plan to an interview day: set it, show it, or clear it.

    With a plan, the daily new-card limit is replaced by the pace that introduces every card
    by 7 days before the interview, leaving the days after for review and a mock round.
    What a day costs is a simulation of you following the plan (your FSRS memory model, your
    seconds per answer, re-drills, the reviews already scheduled, the lab levels still to
    pass); if the busiest day does not fit your budget the plan says what would. A table
    shows the recall on the day (mean and weakest topic) for a few daily budgets beside no
    further study; a budget the lab levels alone fill says so. Each topic's readiness is its
    cards' predicted recall (FSRS) at the start of the interview day, weakest first, beside
    the cards begun and the lab levels passed (docs/readiness.md shows how to recompute it
    from `dojo export`).

    Example: dojo plan --interview 2026-12-21 --minutes 45
    """
    from trainer.core.bank import load_study_bank, sync_bank
    from trainer.core.plan import new_plan, plan_lines, plan_report, prepare_days_ahead

    if clear and (interview or minutes):
        raise click.UsageError("--clear takes no --interview or --minutes")
    with _open_store(browse=not (clear or interview or minutes)) as store:
        current = _read(store.plan)
        if clear:
            _read(lambda: store.set_plan(None))
            click.echo("Plan cleared: the daily new-card limit applies again.", err=as_json)
        elif interview or minutes:
            if interview is None and current is None:
                raise click.UsageError("no plan yet: give --interview YYYY-MM-DD")
            day = _date(interview) if interview else current.interview  # type: ignore[union-attr]
            budget = minutes or (current.minutes if current else DEFAULT_MINUTES)
            if day <= _read(store.study_day):
                raise click.BadParameter(f"{day} is not after today", param_hint="--interview")
            _read(lambda: store.set_plan(new_plan(day, budget)))
        try:
            bank = load_study_bank()
        except Exception as exc:  # the plan is made of the bank's topics
            raise click.ClickException(f"could not load the question bank ({exc})") from exc
        if store.writable:
            _read(lambda: sync_bank(store, bank))  # every question has a card to plan
        report = _read(lambda: plan_report(store, bank, table=True))  # keeps today's
        if report.plan is not None:
            _read(lambda: prepare_days_ahead(store, bank))  # the app's next days read them
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    for line in plan_lines(report):
        click.echo(line)
