"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = "token id 0 is a token like any other"


def verify_greedy(draft_tokens, target_logits):
    """Bug: `x and x == best` treats the drafted id 0 as a mismatch."""
    best = target_logits.argmax(-1).tolist()
    out = []
    for i, x in enumerate(draft_tokens):
        if not (x and x == best[i]):
            return [*out, best[i]]
        out.append(x)
    return [*out, best[len(draft_tokens)]]
