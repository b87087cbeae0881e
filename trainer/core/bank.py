"""Keep the store's cards in line with the question bank (app start and every `dojo` command)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from questions.bank import Bank
    from scheduler.store import Store


def load_study_bank(paths: Sequence[Path | str] | None = None) -> Bank:
    """The bank every client of the schedule opens (the TUI, `dojo due`, `dojo stats`): every
    kind, case studies included, so Today's counts, `dojo due` and a session agree and no
    client retires the cards another one serves."""
    from questions.bank import load_bank
    from trainer.core.catalogue import lab_links

    return load_bank(list(paths) if paths else None, **lab_links())


def sync_bank(store: Store, bank: Bank) -> str | None:
    """Give every question a card, in study order, and retire the cards of questions that no
    longer load, so Today's counts are what a session serves. Returns a note for the learner
    when something is off (an empty bank retires nothing: it is a broken install)."""
    questions = [(q.id, q.topic) for q in bank.study_order()]  # new-card order
    if not questions:
        return "the question bank is empty; showing the cards already in the database"
    store.sync_cards(questions, retire_missing=True)
    if bank.errors:  # a broken pack must not vanish without a word
        files = sorted({str(e.file) for e in bank.errors})
        from questions.wording import plural

        return (f"{plural(len(bank.errors), 'problem')} in {', '.join(files)} kept some "
                "questions out; "
                "run `dojo questions check` for details")
    return None
