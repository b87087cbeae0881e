"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

import torch

from tests.spec_verify.broken import _base

LEVEL = 1
MESSAGE = "in the logits' own precision (fp32)"


def verify_greedy(draft_tokens: list[int], target_logits: torch.Tensor) -> list[int]:
    """Bug: takes the argmax in bfloat16 (to save memory), which ties near-equal logits."""
    return _base.verify_greedy(draft_tokens, target_logits.to(torch.bfloat16))
