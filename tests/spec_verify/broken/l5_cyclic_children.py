"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

LEVEL = 5
CASE = "L5-verify"
MESSAGE = "walks back into the root"


def tree_attention_mask(parents):
    import torch

    n = len(parents)
    mask = torch.eye(n, dtype=torch.bool)
    for i in range(1, n):
        mask[i] |= mask[parents[i]]
    return mask


def verify_tree(tokens, parents, target_logits):
    """Bug: the children list is built over every node, so the root (parent -1) lands in
    children[-1], the last node's: a walk reaching the last node can step back into the root
    (bounded here by the tree's size; unbounded, it never returns)."""
    best = target_logits.argmax(-1).tolist()
    children = [[] for _ in parents]
    for i, par in enumerate(parents):
        children[par].append(i)
    path, cur = [], 0
    while len(path) < len(parents):
        nxt = next((c for c in children[cur] if tokens[c] == best[cur]), None)
        if nxt is None:
            break
        path.append(nxt)
        cur = nxt
    return path, best[cur]
