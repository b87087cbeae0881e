"""The interview syllabus (`questions/syllabus.toml`) resolved against a bank: which questions
cover each item, so that gaps are counted rather than guessed."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from questions.model import Question

SYLLABUS_FILE = Path(__file__).with_name("syllabus.toml")
FLOOR = 3  # questions an item needs
MISSING_FLOOR = 5  # for the items the 2026 audit found with no question at all


class SyllabusError(ValueError):
    """The syllabus file names a topic or question the bank does not have, or is malformed."""


@dataclass(frozen=True)
class SyllabusItem:
    id: str
    title: str
    questions: tuple[str, ...]  # question ids, in bank order
    added: int | None = None  # the year the item joined the syllabus (None: from the start)
    missing: bool = False  # had no question at all before it was added

    @property
    def floor(self) -> int:
        return MISSING_FLOOR if self.missing else FLOOR


def load_syllabus(questions: Sequence[Question], path: Path = SYLLABUS_FILE, *,
                  strict: bool = True) -> list[SyllabusItem]:
    """Every item with the ids of the questions that cover it; raises SyllabusError naming the
    item and the unknown topic or question id (unless not `strict`: a bank that is not the
    whole built-in one, as in a test, then covers what it has)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SyllabusError(f"{path}: {exc}") from None
    topics = {q.topic for q in questions}
    known = {q.id for q in questions}
    items: list[SyllabusItem] = []
    for entry in raw.get("item", []):
        item_id = entry.get("id", "?")
        named = [*entry.get("questions", []), *entry.get("except", [])]
        unknown = sorted({t for t in entry.get("topics", []) if t not in topics}
                         | {q for q in named if q not in known})
        if unknown and strict:
            raise SyllabusError(f"{path}: item {item_id!r} names what the bank does not have: "
                                + ", ".join(unknown))
        chosen = {q.id for q in questions if q.topic in entry.get("topics", [])}
        chosen = (chosen - set(entry.get("except", []))) | set(entry.get("questions", []))
        items.append(SyllabusItem(
            id=item_id, title=entry["title"],
            questions=tuple(q.id for q in questions if q.id in chosen),
            added=entry.get("added"), missing=bool(entry.get("missing", False))))
    return items


def short_items(items: Iterable[SyllabusItem]) -> list[tuple[SyllabusItem, int]]:
    """The items below their floor, with their question counts."""
    return [(item, len(item.questions)) for item in items if len(item.questions) < item.floor]


def markdown(items: Sequence[SyllabusItem]) -> str:
    """docs/syllabus.md: every item and the questions that cover it."""
    lines = [
        "# The syllabus, item by item",
        "",
        "The bank's coverage of an LLM-serving interview, from `questions/syllabus.toml` "
        "(built from",
        "vLLM's, SGLang's, TensorRT-LLM's and NVIDIA Dynamo's documentation and public",
        "LLM-inference interview guides). Each item needs at least "
        f"{FLOOR} questions, and the five items",
        f"the 2026 audit found missing at least {MISSING_FLOOR} "
        "(`tests/questions/test_syllabus.py`). `dojo questions",
        "syllabus` shows the same list with your recall on each item. This page is generated:",
        "`dojo questions syllabus --markdown > docs/syllabus.md`.",
        "",
        "| item | questions | ids |",
        "|---|---|---|",
    ]
    for item in items:
        note = " (added 2026)" if item.added == 2026 else ""
        lines.append(f"| {item.title}{note} | {len(item.questions)} | "
                     + ", ".join(f"`{q}`" for q in item.questions) + " |")
    return "\n".join(lines) + "\n"
