"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

import torch

LEVEL = 5
CASE = "L5-mask"
MESSAGE = "must attend to itself"


def tree_attention_mask(parents):
    """Bug: marks the ancestors but not the node itself."""
    n = len(parents)
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(1, n):
        j = parents[i]
        while j >= 0:
            mask[i, j] = True
            j = parents[j]
    return mask
