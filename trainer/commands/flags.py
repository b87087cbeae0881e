"""`dojo questions flagged`: the questions you flagged for editing (ctrl+f in a review), with
your notes, so a flag leads somewhere. Registered under `dojo questions` by trainer.cli."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the flags as JSON.")
@click.option("--clear", "clear", metavar="ID", help="Remove every flag on question ID (fixed).")
def flagged(as_json: bool, clear: str | None) -> None:
    """List the questions you flagged for editing, oldest first, with your notes.

    Flags are kept in your database (and in `dojo export`) until cleared with --clear ID.
    """
    from trainer.commands.schedule import _open_store

    with _open_store(browse=clear is None) as store:
        if clear is not None:
            removed = store.clear_flags(clear)
            if not removed:  # a mistyped id read "Cleared 0 flags on kv-02.", as if done
                ids = sorted({f.question_id for f in store.flags()})
                raise click.UsageError(
                    f"no flag on {clear!r}; "
                    + (f"flagged: {', '.join(ids)}" if ids else "no question is flagged"))
            click.echo(f"Cleared {removed} flag{'' if removed == 1 else 's'} on {clear}.")
            return
        flags = store.flags()
    if as_json:
        click.echo(json.dumps([{"question_id": f.question_id, "note": f.note,
                                "flagged_at": f.created_at.isoformat(timespec="seconds")}
                               for f in flags], indent=2, ensure_ascii=False))
        return
    if not flags:
        click.echo("No flagged questions. In a review, ctrl+f flags one with a note.")
        return
    for f in flags:
        click.echo(f"{f.question_id}  {f.created_at:%Y-%m-%d}  {f.note}")
