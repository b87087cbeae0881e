"""`dojo study`: list a custom study set (practise it in the app: `u` on Today)."""

from __future__ import annotations

import json

import click

from trainer.commands.schedule import _open_store, _read


@click.command()
@click.argument("kind", type=click.Choice(["mistakes", "lapsed", "ahead", "interview"]))
@click.option("--days", default=7, show_default=True, type=click.IntRange(1, 3650),
              help="lapsed: the window in days.")
@click.option("--topic", help="ahead: the topic id.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print the set as JSON.")
def study(kind: str, days: int, topic: str | None, limit: int, as_json: bool) -> None:
    """List a custom study set, as Anki's filtered decks: mistakes (your recurring mistakes,
    last 30 days), lapsed (failed reviews in the last --days days), ahead (a --topic's cards
    not due yet), interview (cram before the interview: weakest predicted recall first).

    Practise a set in the app (u on Today): it leaves the schedule untouched unless you switch
    on counting the cards due today as their review; every card comes with fresh numbers.
    """
    from questions.wording import plural
    from trainer.core.scheduling import study_set

    with _open_store(browse=True) as store:
        try:
            chosen = _read(lambda: study_set(store, kind, days=days, topic=topic, limit=limit))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        cards = {c.question_id: c for c in _read(store.cards)}
    if as_json:
        click.echo(json.dumps({"kind": chosen.kind, "title": chosen.title,
                               "question_ids": chosen.question_ids}, indent=2))
        return
    click.echo(f"{chosen.title}: {plural(len(chosen.question_ids), 'card')}")
    for qid in chosen.question_ids:
        due = cards[qid].due
        click.echo(f"  {qid}  [{cards[qid].topic}]" + (f"  due {due}" if due else ""))
