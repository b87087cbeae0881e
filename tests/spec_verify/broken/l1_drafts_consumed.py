"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = "verify_greedy changed its caller's input in place: drafts"


def verify_greedy(draft_tokens, target_logits):
    """Bug: consumes the caller's draft list with pop(0) (the answer itself is right)."""
    out, i = [], 0
    while draft_tokens:
        x = draft_tokens.pop(0)
        best = int(target_logits[i].argmax())
        if x != best:
            return [*out, best]
        out.append(x)
        i += 1
    return [*out, int(target_logits[i].argmax())]
