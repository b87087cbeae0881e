"""sampling level 4 on a learner's own `--target`: a checkpoint that pads its logits
past its tokenizer (4,160 logits over the 4,096-token tokenizer) is cut to the tokenizer's ids,
so no sampler draws an id without text, and the reference passes on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_passes, reference_as_solution
from tests.spec_verify.test_own_families import build


@pytest.mark.slow
def test_a_padded_vocabulary_is_cut_to_the_tokenizers(tmp_path: Path) -> None:
    from lab.exercises.sampling import lm

    target = build("llama", tmp_path / "padded", seed=7, vocab=4160)
    model = lm.shipped("cpu", str(target))
    assert model.vocab_size == 4096
    assert tuple(model.next_logits([[5, 6, 7], [8]]).shape) == (2, 4096)
    other = build("qwen2", tmp_path / "padded-qwen", seed=8, vocab=4160)  # no lean path
    assert tuple(lm.shipped("cpu", str(other)).next_logits([[5, 6]]).shape) == (1, 4096)
    assert_passes("sampling", reference_as_solution("sampling", tmp_path / "ref"), 4,
                  models={"target": str(target)})
