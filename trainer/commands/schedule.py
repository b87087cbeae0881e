"""Headless scheduler commands: `dojo due`, `stats`, `backup`, `export`, `import`, `settings`.

Only click and the standard library at top level; the scheduler is imported inside each
command so `dojo --help` stays fast.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from questions.wording import plural

if TYPE_CHECKING:
    from trainer.core.stats import StatsReport
    from trainer.core.store import Store
    from trainer.core.today import Queue

T = TypeVar("T")


def _open_store(*, browse: bool = False) -> Store:
    """Open the learner's database, or exit with a one-line reason (never a traceback).

    With `browse` (commands that only read), a read-only database is opened read-only with a
    note instead of refused. Warnings that did not stop the command (a failed daily backup,
    unreadable settings) go to stderr."""
    from trainer.core.errors import ClockError, StoreError
    from trainer.core.store import open_store, pinned_now

    try:
        pinned_now()  # a bad $DOJO_NOW is refused before anything is opened
        store = open_store(browse=browse, on_read_only=lambda why: click.echo(
            f"note: {why} Showing it read-only.", err=True))
        store.settings()  # reads settings_problem
    except (StoreError, ClockError) as exc:
        raise click.ClickException(str(exc)) from exc
    for warning in [*store.warnings, store.settings_problem]:
        if warning:
            click.echo(f"warning: {warning}", err=True)
    return store


def _sync_bank(store: Store) -> str | None:
    """Bring cards in line with the question bank; returns a note for the learner, if any."""
    from trainer.core.bank import load_study_bank, sync_bank
    from trainer.core.errors import ReadOnlyDatabaseError

    if not store.writable:
        return None

    try:
        bank = load_study_bank()  # the TUI's bank: retiring cards it serves would skew `due`
    except Exception as exc:  # a broken bank must not hide the learner's schedule
        return f"could not load the question bank ({exc}); showing the cards already known"
    try:
        return sync_bank(store, bank)
    except ReadOnlyDatabaseError:
        return None


def _read(fn: Callable[[], T]) -> T:
    """Run a store call, turning a StoreError (disk full, locked, damaged) into one line."""
    from trainer.core.errors import StoreError

    try:
        return fn()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON.")
@click.option(
    "--list/--no-list",
    "show_list",
    default=True,
    show_default=True,
    help="List the question ids, not only the counts.",
)
def due(as_json: bool, show_list: bool) -> None:
    """Show what is due today: reviews, new cards, re-drill and lab rebuilds.

    Reviews come oldest first, then new cards up to the daily new-card limit, then the
    questions a failed lab case brought back today ("reason": "lab" in --json, with the
    exercise, level and case), then the cards answered below 4 today that need re-drilling,
    then passed lab levels due for a rebuild (`dojo lab rebuild`). The study day starts at
    the rollover hour (default 4 AM local).
    """
    from trainer.core.today import lean_queue

    found = lean_queue()  # plain sqlite3 and the cached study index, when they can answer
    if found is not None:
        queue, note = found
        labs: list[Any] = []  # the lean path answers only when no lab rebuild is due
    else:
        from lab.rebuild import due_rebuilds

        with _open_store(browse=True) as store:
            note = _sync_bank(store)
            queue = _read(store.today_queue)
            labs = _read(lambda: due_rebuilds(store))
    if note:
        click.echo(f"note: {note}", err=True)
    _print_due(queue, labs, as_json=as_json, show_list=show_list)


def _print_due(queue: Queue, labs: list[Any], *, as_json: bool, show_list: bool) -> None:
    if as_json:
        items = [
            {
                "question_id": i.question_id,
                "topic": i.topic,
                "kind": i.kind,
                "due": None if i.due is None else i.due.isoformat(),
                **({"reason": "lab", "exercise": i.exercise, "level": i.level, "case": i.case}
                   if i.kind == "lab" else {}),
            }
            for i in queue.items
        ]
        click.echo(
            json.dumps(
                {
                    "day": queue.day.isoformat(),
                    "reviews": len(queue.reviews),
                    "new": len(queue.new),
                    "redrill": len(queue.redrill),
                    "lab": len(queue.lab),
                    "items": items,
                    "labs": [{"exercise": r.exercise, "level": r.level,
                              "due": r.due.isoformat(), "text": r.line, "command": r.command}
                             for r in labs],
                },
                indent=2,
            )
        )
        return
    click.echo(
        f"Study day {queue.day.isoformat()}: {plural(len(queue.reviews), 'review')}, "
        f"{len(queue.new)} new, {len(queue.redrill)} to re-drill"
        + (f", {len(queue.lab)} brought back by a failed lab case." if queue.lab else ".")
    )
    if not len(queue) and not labs:
        click.echo("Nothing due. Come back tomorrow.")
    if show_list:
        for item in queue.items:
            since = f"  (due {item.due.isoformat()})" if item.due else ""
            if item.kind == "lab":
                since = f"  (lab: {item.exercise} L{item.level} failed {item.case})"
            click.echo(f"  {item.kind:<8} {item.question_id}  [{item.topic}]{since}")
    for r in labs:  # passed lab levels that come back (lab.rebuild)
        click.echo(f"  {r.line}   ({r.command})")


@click.command()
@click.option(
    "--days",
    default=30,
    show_default=True,
    type=click.IntRange(1, 3650),
    help="Window for activity, retention and forecast.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the stats as JSON.")
def stats(days: int, as_json: bool) -> None:
    """Show streak, answers per day, true retention, per-topic accuracy, forecast, your
    recurring mistakes and your interview-rehearsal times per lab level.

    True retention counts scheduled reviews only (never re-drill or cram) of mature cards
    (interval of at least 21 days); per-topic accuracy counts scheduled answers only, and
    says how many were counted right after a typo. Recurring mistakes are the named mistakes and MCQ
    distractors you answered most over the last 30 days.
    """
    from trainer.core.bank import load_study_bank
    from trainer.core.stats import collect, report_json

    try:
        bank = load_study_bank()  # only to describe the mistakes: the stats never depend on it
    except Exception:  # a broken bank must not hide the learner's stats
        bank = None
    with _open_store(browse=True) as store:
        report = _read(lambda: collect(store, days, bank=bank))
    if as_json:
        click.echo(json.dumps(report_json(report), indent=2, ensure_ascii=False))
        return
    _echo_counts(report, days)
    _echo_lists(report, days)


def _echo_counts(report: StatsReport, days: int) -> None:
    """`dojo stats`' counts: cards, streak, answers, retention, recall, topic accuracy."""
    from trainer.core.stats import PREDICTED_RECALL_MEANS, TRUE_RETENTION_MEANS

    cards, per_day, retention = report.cards, report.per_day, report.retention
    reviewed = sum(1 for c in cards if not c.is_new)
    click.echo(
        f"Cards: {len(cards)} ({reviewed} reviewed, "
        f"{sum(c.suspended for c in cards)} suspended, "
        f"{plural(sum(c.leech for c in cards), 'leech')})"
    )
    click.echo(f"Streak: {plural(report.streak, 'day')}")
    click.echo(
        f"Answers in the last {plural(days, 'day')}: {sum(per_day.values())} "
        f"(today {list(per_day.values())[-1]})"
        + (f"; {report.overridden} counted right after a typo" if report.overridden else "")
    )
    click.echo(
        f"True retention ({days} d, mature cards): {_pct(retention.rate)} of {retention.total}"
        f" ({TRUE_RETENTION_MEANS})")
    click.echo(f"Predicted recall now: {_pct(report.predicted_recall)} "
               f"({PREDICTED_RECALL_MEANS})")
    if report.topics:
        click.echo("Accuracy by topic:")
        for topic, acc in report.topics.items():
            typo = f" ({acc.overridden} mistyped)" if acc.overridden else ""
            click.echo(
                f"  {topic or '(none)':<28} {_pct(acc.accuracy):>5} of {acc.answered}{typo}")


def _echo_lists(report: StatsReport, days: int) -> None:
    """`dojo stats`' lists: the forecast, EF and intervals, mistakes and rehearsals."""
    forecast = report.forecast
    upcoming = list(forecast.items())[:7]
    click.echo("Due next 7 days: " + ", ".join(f"{d.strftime('%a')} {n}" for d, n in upcoming)
               + f" ({sum(forecast.values())} in the next {plural(days, 'day')}; "
               "--json lists each day)")
    if report.ef:
        click.echo("EF: " + ", ".join(f"{ef}×{n}" for ef, n in report.ef.items()))
    click.echo("Intervals: " + ", ".join(f"{k} {n}" for k, n in report.intervals.items()))
    if report.mistakes:
        click.echo("Your recurring mistakes (last 30 days; the topic's concept note explains):")
        for m in report.mistakes:
            click.echo(f"  ×{m.count} {m.says}  [{m.question_id}, topic {m.topic}]")
    if report.rehearsals:
        from trainer.core.stats import rehearsal_line

        click.echo("Interview rehearsals, time to first pass (a bar each, oldest first):")
        for r in report.rehearsals:
            click.echo(f"  {rehearsal_line(r)}")


@click.command()
def backup() -> None:
    """Make a backup of your database now (kept with the rolling daily backups)."""
    with _open_store() as store:
        try:
            path = store.backup()
        except (OSError, sqlite3.Error) as exc:  # disk full: the partial copy is removed
            raise click.ClickException(
                f"the backup could not be written ({exc}); your database is untouched"
            ) from exc
    click.echo(str(path))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
def export(file: Path | None) -> None:
    """Export cards, the answer log and lab attempts as JSON to FILE (default: stdout).

    The file can be imported on another machine with `dojo import FILE`.
    """
    from trainer.core.store import export_history, history_text

    with _open_store(browse=True) as store:
        if file is None or str(file) == "-":
            sys.stdout.write(history_text(_read(store.export_history)))
            return
        data = _read(lambda: export_history(store, file))
    click.echo(
        f"Exported {plural(len(data['cards']), 'card')}, "
        f"{plural(len(data['reviews']), 'answer')} and "
        f"{plural(len(data['lab_attempts']), 'lab attempt')} to {file}",
        err=True,
    )


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_(file: Path) -> None:
    """Merge a history exported by `dojo export` (safe to run twice).

    Answers already present are skipped; a card's schedule is taken from FILE only if FILE
    saw a later review of it. An invalid file is refused as a whole. A backup of your
    database is made first.
    """
    from trainer.core.errors import HistoryFormatError, StoreError

    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.ClickException(
            f"{file} is not a JSON file ({exc}); nothing was imported"
        ) from exc
    with _open_store() as store:
        try:
            store.backup()  # a merge is undoable only from a copy
            summary = store.import_history(data)
        except (HistoryFormatError, StoreError, OSError, sqlite3.Error) as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(
        f"Imported {plural(summary.reviews_added, 'answer')} ({summary.reviews_skipped} already "
        f"present), {plural(summary.cards_added, 'new card')}, "
        f"{plural(summary.cards_updated, 'card')} updated, "
        f"{plural(summary.lab_attempts_added, 'lab attempt')}."
        + (f" Lab cards: {summary.lab_cards_added} new, {summary.lab_cards_updated} updated."
           if summary.lab_cards_added or summary.lab_cards_updated else "")
        + (f" {plural(summary.mock_rounds_added, 'mock round')} added."
           if summary.mock_rounds_added else "")
    )


@click.command()
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
def settings(assignments: tuple[str, ...]) -> None:
    """Show your scheduling settings, or change them: new_limit, review_limit, rollover_hour,
    timezone (an IANA name, or "local"), backup_keep, leech_lapses, scheduler (sm2, the
    default, or fsrs: FSRS sets each review's next due day; switching keeps all history),
    desired_retention (FSRS: the recall a review is scheduled for, 0.70-0.97, default 0.90),
    lab_host (an SSH host labs are graded on, as `dojo lab grade --on HOST`; "local": here).

    Example: dojo settings new_limit=20 rollover_hour=3
    """
    from dataclasses import asdict

    from trainer.core.errors import StoreError
    from trainer.core.store import setting_names

    kinds = setting_names()
    changes: dict[str, Any] = {}
    for item in assignments:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in kinds:
            raise click.UsageError(
                f"expected KEY=VALUE with KEY one of {', '.join(kinds)}, got {item!r}"
            )
        raw = raw.strip()
        if key in ("timezone", "lab_host"):
            changes[key] = None if raw.lower() in ("", "local", "none") else raw
        elif key == "scheduler":
            changes[key] = raw.lower()
        elif key == "desired_retention":
            try:
                changes[key] = float(raw)
            except ValueError:
                raise click.UsageError(f"{key} takes a number such as 0.9, got {raw!r}") from None
        else:
            try:
                changes[key] = int(raw)
            except ValueError:
                raise click.UsageError(f"{key} takes a whole number, got {raw!r}") from None
    store = _open_store()
    try:
        current = store.update_settings(**changes) if changes else store.settings()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    finally:
        store.close()
    shown = asdict(current)
    width = max(map(len, shown))  # desired_retention (17) stood out of a 14-wide column
    for key, value in shown.items():
        value = "local" if key in ("timezone", "lab_host") and value is None else value
        click.echo(f"{key:<{width}}  {value}")
    held = store.day_rule_held_until()
    if held is not None:
        click.echo(f"note: today's study day keeps the previous time zone/rollover until "
                   f"{held:%Y-%m-%d %H:%M} UTC, so today's answers stay today's.", err=True)
