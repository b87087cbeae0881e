"""The ground truth of target cases (`grading.truth`): the model's own greedy tokens whatever the
hint holds (a hint only saves forwards), and, for the shipped target, computed without
transformers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.exercises.batch_engine.grading import truth

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def forwards(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A fresh truth store, and a list that grows by one per forward of the shipped target."""
    import torch

    from lab.exercises.batch_engine.runtime import load_target

    torch.set_num_threads(1)
    monkeypatch.setattr(truth, "_SOLO", {})
    calls: list[int] = []
    handle = load_target("cpu", "float32").model.register_forward_hook(
        lambda *_: calls.append(1))
    yield calls
    handle.remove()


@pytest.mark.slow  # loads the shipped target and decodes ~60 tokens
def test_a_hint_saves_forwards_and_never_changes_the_tokens(
        forwards: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.exercises.batch_engine.targets import prompt_tokens

    ids, _, _ = prompt_tokens()
    wants: list[Any] = [(tuple(ids[5:17]), 12, (), ()), (tuple(ids[40:43]), 9, (), ())]
    calls = forwards
    alone = truth.solo_greedy_many(None, wants)
    assert len(calls) == 12  # no hint: one forward per token (both rows in each)
    right = [list(s[0]) for s in alone]
    for hints, n_forwards in [
        (right, 1),  # right: every token from one forward
        ([[*right[0][:5], 3, 3, 3], right[1]], 7),  # wrong at token 5: then one per token
        ([[3] * 12, [7] * 9], 12),  # wrong from the first token
    ]:
        monkeypatch.setattr(truth, "_SOLO", {})
        calls.clear()
        got = truth.solo_greedy_many(None, wants, hints)
        # the same tokens, reasons and runner-ups; the margins to float rounding (the forward
        # that scored a position held more or fewer tokens after it)
        assert [(s[0], s[1], s[3]) for s in got] == [(s[0], s[1], s[3]) for s in alone]
        assert all(g == pytest.approx(a, abs=1e-4) for s, r in zip(got, alone, strict=True)
                   for g, a in zip(s[2], r[2], strict=True))
        assert len(calls) == n_forwards


@pytest.mark.slow  # a fresh interpreter importing torch (~3 s)
def test_the_answer_of_a_shipped_target_case_needs_no_transformers() -> None:
    code = (
        "import sys\n"
        "from lab.exercises.batch_engine import grading\n"
        "from lab.grader.api import RunContext\n"
        "case = next(c for c in grading.cases(1, 5) if c.id == 'hidden-target-5')\n"
        "answer = grading.expected(case, RunContext(device='cpu', seed=5))\n"
        "assert all(t is not None for t in answer['truth'][:4]), answer['truth']\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'transformers'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow  # two reference runs on the shipped target
def test_a_broken_step_wrapper_fails_a_shipped_target_case(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped target's truth comes from its own forward, not the step wrapper every engine
    runs on: a wrapper that lets each token see only the last 4 columns makes even the
    reference fail."""
    import importlib

    from lab.exercises.batch_engine import drive, grading, runtime
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(1, 5) if c.id == "target-mixed-static")
    ctx = RunContext(device="cpu", seed=5)
    reference = importlib.import_module(grading.REFERENCE)

    def judged() -> Any:
        monkeypatch.setattr(truth, "_SOLO", {})
        return grading.check(case, drive.run(reference, case, ctx), grading.expected(case, ctx))

    assert judged().passed
    forward = runtime.HFStepModel.forward

    def short_sighted(self: Any, ids: Any, mask: Any, positions: Any, kv: Any) -> Any:
        mask = mask.clone()
        mask[:, :-4] = 0
        return forward(self, ids, mask, positions, kv)

    monkeypatch.setattr(runtime.HFStepModel, "forward", short_sighted)
    verdict = judged()
    assert not verdict.passed
    assert "tokens differ from position" in verdict.message
