"""The bank the app uses: the built-in topic files plus the learner's imported packs.

Loading never raises for bad content: valid questions load, broken ones are left out and listed
in `Bank.errors` (file:line:field) for the UI to show.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from questions.model import Question, Topic
from questions.problems import Problem
from questions.validate import LOAD_DRAWS, validate_files

ALL_KINDS = frozenset({"mcq", "numeric", "case"})

BUILTIN_DIR = Path(__file__).resolve().parent / "topics"


def packs_dir() -> Path:
    """Where `dojo questions import` keeps the learner's packs (under the data dir)."""
    from scheduler.paths import data_dir

    return data_dir() / "packs"


def builtin_files() -> list[Path]:
    return sorted(BUILTIN_DIR.glob("*.toml")) if BUILTIN_DIR.is_dir() else []


def pack_files() -> list[Path]:
    folder = packs_dir()
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def expand(paths: Iterable[Path | str]) -> list[Path]:
    """Files as given, folders as their *.toml files (sorted)."""
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        files.extend(sorted(path.glob("*.toml")) if path.is_dir() else [path])
    return files


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


def load_bank(paths: Sequence[Path | str] | None = None, *, draws: int = LOAD_DRAWS,
              kinds: Collection[str] = ALL_KINDS, exercises: Mapping[str, int] | None = None,
              sims: Collection[str] | None = None) -> Bank:
    """Load the built-in bank plus imported packs (or just `paths`: files or folders).

    Every kind by default (case studies are answered step by step, `questions.cases`). A
    client that cannot show some kind passes `kinds` so such a card is never scheduled or
    served to it: all questions are still validated, and `Bank.left_out` counts what was left
    out by kind. `exercises`/`sims` are lab's catalogue to check the lab links against
    (`validate_files`; the trainer passes `trainer.core.catalogue.lab_links()`). The validated
    result is cached on disk (`questions.cache`), keyed by the files' content and the catalogue."""
    from questions.cache import cached_report

    files = builtin_files() + pack_files() if paths is None else expand(paths)
    catalogue = repr((sorted((exercises or {}).items()), sorted(sims or ()),
                      exercises is None, sims is None))
    report = cached_report(files, draws, BUILTIN_DIR, lambda: validate_files(
        files, draws=draws, builtin_dir=BUILTIN_DIR, exercises=exercises, sims=sims),
        catalogue)  # keyed by content: never stale
    kept = [q for q in report.questions if q.kind in kinds]
    left_out: dict[str, int] = {}
    for q in report.questions:
        if q.kind not in kinds:
            left_out[q.kind] = left_out.get(q.kind, 0) + 1
    used = {q.topic for q in kept}  # a topic whose questions all failed is left out
    topics = {tid: topic for tid, topic in report.topics.items() if tid in used}
    return Bank(kept, topics, report.problems, left_out)
