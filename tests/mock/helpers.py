"""Answers a test gives a mock round: right ones, computed from the round's own draws."""

from __future__ import annotations

import shutil
from pathlib import Path

from lab.sims.decisions import decision
from questions.design import design_prompt
from trainer.core.mock import MockRound
from trainer.core.services import Services

ROOT = Path(__file__).resolve().parents[2]


def right_answer(mock: MockRound, services: Services) -> str:
    """The text that answers the current item fully right (the lab is graded, not typed)."""
    item = mock.current
    assert item is not None
    if item.kind == "estimate":
        inst = services.question(item.ref["question"]).draw(int(item.ref["seed"]))
        step = inst.steps[len(item.answers)] if inst.is_case else inst
        assert step.answer is not None
        return f"{step.answer:.12g}"
    if item.kind == "sim":
        return " ".join(f"{k}={v}" for k, v in decision(item.ref["decision"]).example.items())
    if item.kind == "design":
        if not item.text:
            return "Size KV per seat, continuous batching with chunked prefill, admission control."
        return "all" if design_prompt(item.ref["prompt"]).rubric else "none"
    raise AssertionError(f"{item.kind} is graded, not typed")


def solve_lab(exercise: str) -> None:
    """Put a correct kv-bytes solution where the rehearsal's fresh stub is."""
    from lab.exercises import get
    from tests.lab_state import solution_path

    assert exercise == "kv-bytes"
    target = solution_path(get(exercise))
    assert target.exists(), "the rehearsal put a fresh stub there"
    shutil.copyfile(ROOT / "lab" / "reference" / "kv_bytes.py", target)
