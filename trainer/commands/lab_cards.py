"""`dojo lab restore`, `rebuild` and `due`: the lab cards (passed levels that come back for a
rebuild, `lab.rebuild`), wired into the `dojo lab` group by `trainer.commands.lab`.

Only click and the standard library at top level, like the group's other commands; what they
share with them is `trainer.commands.lab_common` (one `Lab` per command).
"""

from __future__ import annotations

import click

from questions.wording import plural
from trainer.commands.lab_common import exercise, opened, usage_error


@click.command()
@click.argument("exercise_id")
def restore(exercise_id: str) -> None:
    """End an interview rehearsal and put your own file back (the rehearsal's file is kept)."""
    with opened() as lab:
        ex = exercise(lab, exercise_id)
        try:
            restored = lab.restore(ex)
        except ValueError as exc:
            usage_error(str(exc))
    if restored.kept is not None:
        click.echo(f"The rehearsal's file is kept at {restored.kept}")
    click.echo(f"Your file is back: {restored.path}")
    if restored.lapse:
        click.echo(restored.lapse)


@click.command()
@click.argument("exercise_id")
@click.option("--level", type=int, required=True, help="The passed level to rebuild.")
@click.option("--minutes", type=click.IntRange(1, 600), default=45, show_default=True,
              help="The rebuild's clock (the quality counts passing within it).")
def rebuild(exercise_id: str, level: int, minutes: int) -> None:
    """Rebuild a passed level from a blank stub: its lab card is graded by the pass.

    Your file is moved aside (kept; `dojo lab restore` brings it back), the level starts from
    a fresh stub with the clock running and hints off, as an interview rehearsal. Passing it
    grades the level's card (first grading within the clock: 5; few gradings: 4; more: 3);
    restoring before a pass is a lapse. `dojo lab due` lists the levels due.
    """
    from lab.exercises import ExerciseError
    from lab.rebuild import RebuildError, start_rebuild

    with opened() as lab:
        ex = exercise(lab, exercise_id)
        try:
            ex.level(level)
            path, session, card = start_rebuild(lab.state, ex, level, minutes)
        except (ExerciseError, RebuildError) as exc:
            usage_error(str(exc))
        today = lab.today()
    click.echo(f"Rebuild: {ex.id} level {level} ({ex.level(level).title}), "
               f"{plural(minutes, 'minute')}, "
               "hints off. The clock is running.")
    if card.due is not None and card.due > today:
        click.echo(f"Not due until {card.due.isoformat()}: this is practice and leaves the "
                   "schedule as it is.")
    if session.moved_aside:
        click.echo(f"Your file was moved aside to {session.moved_aside} "
                   f"(`dojo lab restore {ex.id}` brings it back).")
    click.echo(f"Fresh stub: {path}")
    click.echo(f"Then run: dojo lab grade {ex.id} --level {level}")


@click.command("due")
@click.option("--json", "as_json", is_flag=True, help="Print the due lab cards as JSON.")
def due_cmd(as_json: bool) -> None:
    """Passed levels due for a rebuild today (the lab half of `dojo due`)."""
    import json

    from lab.rebuild import due_rebuilds
    from trainer.commands.schedule import _open_store, _read

    with _open_store(browse=True) as store:
        rows = _read(lambda: due_rebuilds(store))
    if as_json:
        click.echo(json.dumps([{"exercise": r.exercise, "level": r.level,
                                "due": r.due.isoformat(), "text": r.line,
                                "command": r.command} for r in rows], indent=2))
        return
    if not rows:
        click.echo("No lab level is due for a rebuild today.")
    for r in rows:
        click.echo(f"  {r.line}   ({r.command})")
