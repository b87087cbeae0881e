"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = 'bonus token dropped'

def verify_greedy(draft_tokens, target_logits):
    """Bug: when every drafted token matches, forgets the bonus argmax(row k)."""
    out = []
    for i, x in enumerate(draft_tokens):
        best = int(target_logits[i].argmax())
        if x != best:
            return [*out, best]
        out.append(x)
    return out
