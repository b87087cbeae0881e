"""The bank the app uses: the built-in topic files plus the learner's imported packs.

Loading never raises for bad content: valid questions load, broken ones are left out and listed
in `Bank.errors` (file:line:field) for the UI to show.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from questions.files import BUILTIN_DIR, builtin_files, expand, pack_files, packs_dir
from questions.problems import Problem

if TYPE_CHECKING:  # the validator is imported when a bank is loaded: listing files stays light
    from questions.model import Question, Topic

ALL_KINDS = frozenset({"mcq", "numeric", "case"})


@dataclass
class Bank:
    questions: list[Question] = field(default_factory=list)
    topics: dict[str, Topic] = field(default_factory=dict)
    errors: list[Problem] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # kind -> valid questions not loaded

    def __post_init__(self) -> None:
        self._by_id = {q.id: q for q in self.questions}

    def get(self, question_id: str) -> Question | None:
        return self._by_id.get(question_id)

    def by_topic(self, topic_id: str) -> list[Question]:
        return [q for q in self.questions if q.topic == topic_id]

    def study_order(self) -> list[Question]:
        """The order new cards are introduced: topics interleaved round-robin, easier first.

        A learner's first sessions should touch every topic rather than drain one file, and
        within a topic the warm-up questions come before the hard ones. The learner's own
        packs lead each round: they were imported to be studied, so they show up today, not
        after a full round of built-in topics has used up the day's new cards.
        """
        per_topic: dict[str, list[Question]] = {}
        for q in self.questions:
            per_topic.setdefault(q.topic, []).append(q)
        builtin = BUILTIN_DIR.resolve()
        groups = sorted(per_topic.values(), key=lambda qs: qs[0].source.resolve().parent
                        == builtin)  # stable: packs first, each group in file order
        queues = [sorted(qs, key=lambda q: q.difficulty) for qs in groups]
        order: list[Question] = []
        for rank in range(max((len(qs) for qs in queues), default=0)):
            order.extend(qs[rank] for qs in queues if rank < len(qs))
        return order

    def __len__(self) -> int:
        return len(self.questions)


def load_bank(paths: Sequence[Path | str] | None = None, *, draws: int | None = None,
              kinds: Collection[str] = ALL_KINDS, exercises: Mapping[str, int] | None = None,
              sims: Collection[str] | None = None, version: str = "") -> Bank:
    """Load the built-in bank plus imported packs (or just `paths`: files or folders).

    Every kind by default (case studies are answered step by step, `questions.cases`). A
    client that cannot show some kind passes `kinds` so such a card is never scheduled or
    served to it: all questions are still validated, and `Bank.left_out` counts what was left
    out by kind. `exercises`/`sims` are lab's catalogue to check the lab links against
    (`validate_files`; the trainer passes `trainer.core.catalogue.lab_links()`). `draws`
    defaults to `questions.validate.LOAD_DRAWS`. The validated result is cached on disk
    (`questions.cache`), keyed by the files' stamps, the catalogue and the app's `version`."""
    from questions.cache import cached_report
    from questions.validate import LOAD_DRAWS, validate_files

    draws = LOAD_DRAWS if draws is None else draws

    files = builtin_files() + pack_files() if paths is None else expand(paths)
    catalogue = repr((sorted((exercises or {}).items()), sorted(sims or ()),
                      exercises is None, sims is None))
    report = cached_report(files, draws, BUILTIN_DIR, lambda: validate_files(
        files, draws=draws, builtin_dir=BUILTIN_DIR, exercises=exercises, sims=sims),
        catalogue, version)  # keyed by the files' stamps: a write is seen at once
    kept = [q for q in report.questions if q.kind in kinds]
    left_out: dict[str, int] = {}
    for q in report.questions:
        if q.kind not in kinds:
            left_out[q.kind] = left_out.get(q.kind, 0) + 1
    used = {q.topic for q in kept}  # a topic whose questions all failed is left out
    topics = {tid: topic for tid, topic in report.topics.items() if tid in used}
    return Bank(kept, topics, report.problems, left_out)


__all__ = ["ALL_KINDS", "BUILTIN_DIR", "Bank", "builtin_files", "expand", "load_bank", "pack_files",
           "packs_dir"]
