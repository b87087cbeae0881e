"""Timed calls cannot be answered from a cache: each call of spec-verify level 3's timed case
drafts afresh (its own ctx.seed), and a row no correct verifier could return fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, only_cases

pytest.importorskip("torch")
pytestmark = pytest.mark.slow
LOOP = Path(__file__).resolve().parent / "broken" / "l3_vocab_loop.py"


def test_a_slow_loop_that_replays_its_first_answer_is_caught(tmp_path: Path) -> None:
    """The vocabulary loop, memoised on the probability tensors (the same objects on every
    call): every timed call after the first would be instant if calls repeated themselves."""
    memo = tmp_path / "spec_verify.py"
    memo.write_text(LOOP.read_text() + (
        "\n_slow = verify_batch\n_cache = {}\n\n"
        "def verify_batch(draft_tokens, draft_probs, target_probs, generator):\n"
        "    key = (id(draft_probs), id(target_probs))\n"
        "    if key not in _cache:\n"
        "        _cache[key] = _slow(draft_tokens, draft_probs, target_probs, generator)\n"
        "    return _cache[key]\n"))
    assert_fails(only_cases("spec-verify", "L3-large-vocab"), memo, 3,
                 match=r"while timing \(a run with seed \d+\)", kind="wrong")


def test_a_fast_answer_no_verifier_could_give_is_caught(tmp_path: Path) -> None:
    """Reject every draft and emit token 0, instantly: structurally a block, but a draft with
    p >= q is always accepted and the token after a rejection has p > q."""
    cheat = tmp_path / "spec_verify.py"
    cheat.write_text("def verify_batch(draft_tokens, draft_probs, target_probs, generator):\n"
                     "    return [[0] for _ in range(draft_tokens.shape[0])]\n")
    assert_fails(only_cases("spec-verify", "L3-large-vocab"), cheat, 3,
                 match=r"no correct verifier can return that", kind="wrong")
