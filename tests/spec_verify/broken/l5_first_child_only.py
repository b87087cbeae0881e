"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

LEVEL = 5
CASE = "L5-verify"
MESSAGE = "try every child"


def verify_tree(tokens, parents, target_logits):
    """Bug: only ever looks at a node's first child, as if the tree were a chain."""
    best = target_logits.argmax(-1).tolist()
    path, cur = [], 0
    while True:
        kids = [c for c in range(1, len(parents)) if parents[c] == cur]
        if not kids or tokens[kids[0]] != best[cur]:
            return path, best[cur]
        path.append(kids[0])
        cur = kids[0]
