"""`dojo questions syllabus`: the interview syllabus item by item, how many questions cover each,
and your recall on them. Registered under `dojo questions` by trainer.cli."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the items as JSON.")
@click.option("--markdown", is_flag=True,
              help="Print docs/syllabus.md (every item with its question ids), no recall.")
def syllabus(as_json: bool, markdown: bool) -> None:
    """List the syllabus items with their question counts and your recall on each.

    Recall is FSRS's predicted recall now, averaged over the item's questions you have studied
    ("-" when you have studied none); an item's questions come from questions/syllabus.toml.
    """
    from questions import syllabus as plan
    from trainer.commands.schedule import _open_store
    from trainer.core.bank import load_study_bank
    from trainer.core.syllabus import coverage

    bank = load_study_bank()
    if markdown:
        click.echo(plan.markdown(plan.load_syllabus(list(bank.questions))), nl=False)
        return
    with _open_store(browse=True) as store:
        rows = coverage(store, bank)
    if as_json:
        click.echo(json.dumps([{
            "id": r.item.id, "title": r.item.title, "questions": r.questions,
            "introduced": r.introduced, "recall": r.recall, "added": r.item.added,
            "question_ids": list(r.item.questions)} for r in rows], indent=2))
        return
    width = max(len(r.item.title) for r in rows)
    click.echo(f"{'item':<{width}}  questions  studied  recall")
    for r in rows:
        recall = "-" if r.recall is None else f"{r.recall:.0%}"
        mark = " *" if r.item.added == 2026 else ""
        click.echo(f"{r.item.title:<{width}}  {r.questions:>9}  {r.introduced:>7}  {recall:>6}"
                   f"{mark}")
    click.echo(f"{len(rows)} items, {sum(r.questions for r in rows)} question links; "
               "* added to the syllabus in 2026")
