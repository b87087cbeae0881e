"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

LEVEL = 5
CASE = "L5-verify"
MESSAGE = "row i scores the position after node i"


def verify_tree(tokens, parents, target_logits):
    """Bug: checks a child against its own row instead of its parent's."""
    best = target_logits.argmax(-1).tolist()
    path, cur = [], 0
    while True:
        nxt = next((c for c in range(1, len(parents))
                    if parents[c] == cur and tokens[c] == best[c]), None)
        if nxt is None:
            return path, best[cur]
        path.append(nxt)
        cur = nxt
