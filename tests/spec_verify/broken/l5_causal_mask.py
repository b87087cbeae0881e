"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

import torch

LEVEL = 5
CASE = "L5-mask"
MESSAGE = "causal (lower-triangular) mask"


def tree_attention_mask(parents):
    """Bug: a plain causal mask, so every node also sees earlier siblings and branches."""
    n = len(parents)
    return torch.ones(n, n, dtype=torch.bool).tril()
