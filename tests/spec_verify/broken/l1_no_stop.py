"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = "emitted tokens past the block's end"

def verify_greedy(draft_tokens, target_logits):
    """Bug: keeps checking drafts after the first mismatch instead of stopping."""
    out = []
    for i, x in enumerate(draft_tokens):
        best = int(target_logits[i].argmax())
        out.append(x if x == best else best)
        if x != best and i == len(draft_tokens) - 1:
            return out
    return [*out, int(target_logits[len(draft_tokens)].argmax())]
