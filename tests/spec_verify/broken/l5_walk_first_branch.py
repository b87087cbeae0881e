"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

LEVEL = 5
CASE = "generate-tiny"  # the tree loop: right output, fewer tokens per pass than the tree offers
MESSAGE = "try every child, not only the first"


def tree_attention_mask(parents):
    import torch

    n = len(parents)
    mask = torch.eye(n, dtype=torch.bool)
    for i in range(1, n):
        mask[i] |= mask[parents[i]]
    return mask


def verify_tree(tokens, parents, target_logits):
    """Bug: walks only the first child at each node (the first branch: a plain chain), so the
    output is still the target's, but the other branches are scored for nothing."""
    best = target_logits.argmax(-1).tolist()
    path, cur = [], 0
    while True:
        kids = [c for c in range(1, len(parents)) if parents[c] == cur][:1]
        nxt = next((c for c in kids if tokens[c] == best[cur]), None)
        if nxt is None:
            return path, best[cur]
        path.append(nxt)
        cur = nxt
