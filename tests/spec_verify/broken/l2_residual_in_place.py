"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = "verify_sampling changed its caller's input in place: p"


def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: builds the residual max(0, p - q) in place, in the caller's target row (the
    block it returns is drawn from the right law)."""
    out = _base.sample_block(draft_tokens, draft_probs, target_probs, generator)
    n = len(out) - 1
    if n < len(draft_tokens):
        target_probs[n].sub_(draft_probs[n]).clamp_(min=0)
    return out

