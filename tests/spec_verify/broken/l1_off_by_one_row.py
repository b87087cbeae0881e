"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = 'off-by-one logits row'

def verify_greedy(draft_tokens, target_logits):
    """Bug: checks draft[i] against row i + 1 (the row after it)."""
    out = []
    k = len(draft_tokens)
    for i, x in enumerate(draft_tokens):
        best = int(target_logits[i + 1].argmax())
        if x != best:
            return [*out, best]
        out.append(x)
    return [*out, int(target_logits[k].argmax())]
