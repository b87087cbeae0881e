"""Keep the store's cards in line with the question bank (app start and every `dojo` command),
and the study index: what `dojo due` needs of the bank, read from the cache without importing
the validator or the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from questions.bank import Bank
    from scheduler.store import Store

INDEX_ENTRY = "study-index.json"  # in the bank cache folder (questions.cache)


@dataclass(frozen=True)
class StudyIndex:
    """The study bank as `sync_bank` uses it: (question id, topic) in study order, and the
    files whose problems kept questions out (one entry per problem); and what the home screen
    shows of it before the bank loads: every topic's (id, title), the number of questions,
    and (topic, exercise, level) of each question's lab link."""

    questions: tuple[tuple[str, str], ...]
    problem_files: tuple[str, ...]
    topics: tuple[tuple[str, str], ...] = ()
    total: int = 0
    labs: tuple[tuple[str, str, int], ...] = ()


def load_study_bank(paths: Sequence[Path | str] | None = None) -> Bank:
    """The bank every client of the schedule opens (the TUI, `dojo due`, `dojo stats`): every
    kind, case studies included, so Today's counts, `dojo due` and a session agree and no
    client retires the cards another one serves. Loading the app's own bank also refreshes
    the study index when it is stale."""
    from questions.bank import load_bank
    from trainer import __version__
    from trainer.core.catalogue import lab_links

    bank = load_bank(list(paths) if paths else None, version=__version__, **lab_links())
    if not paths:
        _refresh_index(bank)
    return bank


def _index_key() -> str | None:
    """The study index's cache key: the app's bank files, the validator and lab catalogue
    code (`questions.cache.bank_key`) and the app's version; None if a file vanished."""
    from questions.cache import bank_key
    from questions.files import BUILTIN_DIR, builtin_files, pack_files
    from trainer import __version__

    return bank_key(builtin_files() + pack_files(), 0, BUILTIN_DIR, "study index", __version__)


def index_of(bank: Bank) -> StudyIndex:
    return StudyIndex(tuple((q.id, q.topic) for q in bank.study_order()),
                      tuple(str(e.file) for e in bank.errors),
                      tuple(sorted((tid, t.title) for tid, t in bank.topics.items())),
                      len(bank.questions),
                      tuple((q.topic, q.lab.exercise, q.lab.level) for q in bank.questions
                            if q.lab is not None))


def _refresh_index(bank: Bank) -> None:
    from questions.cache import read_entry, write_entry

    key = _index_key()
    if key is None:
        return
    index = index_of(bank)
    value = {"questions": [list(q) for q in index.questions], "problem_files":
             list(index.problem_files), "topics": [list(t) for t in index.topics],
             "total": index.total, "labs": [list(link) for link in index.labs]}
    if read_entry(INDEX_ENTRY, key) != value:
        write_entry(INDEX_ENTRY, key, value)


def study_index() -> StudyIndex | None:
    """The app's study bank as last loaded, when nothing it depends on changed since (bank
    files, validator, lab catalogue, app version); None otherwise: then `load_study_bank`."""
    from questions.cache import read_entry

    key = _index_key()
    value: Any = None if key is None else read_entry(INDEX_ENTRY, key)
    try:
        return StudyIndex(tuple((str(q), str(t)) for q, t in value["questions"]),
                          tuple(str(f) for f in value["problem_files"]),
                          tuple((str(i), str(t)) for i, t in value["topics"]),
                          int(value["total"]),
                          tuple((str(t), str(e), int(lv)) for t, e, lv in value["labs"]))
    except (TypeError, KeyError, ValueError):  # absent, stale or malformed: rebuilt by a load
        return None


def sync_bank(store: Store, bank: Bank) -> str | None:
    """Give every question a card, in study order, and retire the cards of questions that no
    longer load, so Today's counts are what a session serves. Returns a note for the learner
    when something is off (an empty bank retires nothing: it is a broken install)."""
    index = index_of(bank)
    if not index.questions:
        return "the question bank is empty; showing the cards already in the database"
    store.sync_cards(index.questions, retire_missing=True)
    return bank_note(index)


def bank_note(index: StudyIndex) -> str | None:
    """The learner's note when problems kept questions out (a broken pack must not vanish
    without a word), else None."""
    if not index.problem_files:
        return None
    from questions.wording import plural

    files = sorted(set(index.problem_files))
    return (f"{plural(len(index.problem_files), 'problem')} in {', '.join(files)} kept some "
            "questions out; run `dojo questions check` for details")
