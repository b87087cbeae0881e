"""Broken on purpose (level 5): the grader must name this bug (see MESSAGE)."""

LEVEL = 5
CASE = "deep-chain"
MESSAGE = "no fixed bound on the depth"


def verify_tree(tokens, parents, target_logits):
    """Bug: the walk stops after at most 8 levels (a bound taken from the examples)."""
    children = [[] for _ in parents]
    for i in range(1, len(parents)):
        children[parents[i]].append(i)
    path, cur = [], 0
    for _ in range(8):
        best = int(target_logits[cur].argmax())
        nxt = next((c for c in children[cur] if tokens[c] == best), None)
        if nxt is None:
            break
        path.append(nxt)
        cur = nxt
    return path, int(target_logits[cur].argmax())
