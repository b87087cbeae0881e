"""System-design prompts with rubrics (questions/design/prompts.toml) for the mock round.

The answer is free text; the learner then marks which rubric points it covered. A rubric holds
4-6 points an interviewer listens for, so the self-grade is a count, not a feeling.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROMPTS_FILE = Path(__file__).with_name("design") / "prompts.toml"
RUBRIC_SIZE = (4, 6)


@dataclass(frozen=True)
class DesignPrompt:
    id: str
    topic: str
    title: str
    prompt: str
    rubric: tuple[str, ...]


@cache
def design_prompts(path: Path = PROMPTS_FILE) -> tuple[DesignPrompt, ...]:
    """Every prompt, checked: unique ids and a rubric of 4-6 points (ValueError otherwise)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out: list[DesignPrompt] = []
    for raw in data.get("prompt", []):
        p = DesignPrompt(id=raw["id"], topic=raw["topic"], title=raw["title"],
                         prompt=" ".join(raw["prompt"].split()), rubric=tuple(raw["rubric"]))
        lo, hi = RUBRIC_SIZE
        if not lo <= len(p.rubric) <= hi:
            raise ValueError(f"{path}: {p.id} has {len(p.rubric)} rubric points, want {lo}-{hi}")
        if any(q.id == p.id for q in out):
            raise ValueError(f"{path}: duplicate prompt id {p.id}")
        out.append(p)
    return tuple(out)


def design_prompt(prompt_id: str) -> DesignPrompt:
    for p in design_prompts():
        if p.id == prompt_id:
            return p
    raise KeyError(prompt_id)


def parse_points(text: str, count: int) -> list[int]:
    """The rubric points a learner says they covered: "1 3 4", "1,3", "all" or "none"
    (1-based in, 0-based out; ValueError naming the bad part)."""
    words = text.replace(",", " ").lower().split()
    if words == ["none"] or words == ["0"]:
        return []
    if words == ["all"]:
        return list(range(count))
    if not words:
        raise ValueError(f"type the numbers of the points you covered (1-{count}), all or none")
    picked: set[int] = set()
    for word in words:
        if not word.isdigit() or not 1 <= int(word) <= count:
            raise ValueError(f"'{word}' is not a point number 1-{count}")
        picked.add(int(word) - 1)
    return sorted(picked)
