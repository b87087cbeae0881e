"""Broken on purpose (level 3): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 3
MESSAGE = "own first rejection"

def verify_batch(draft_tokens, draft_probs, target_probs, generator):
    """Bug: counts every accepted coin, not the accepted prefix (no cumprod)."""
    return _base.batch_block(draft_tokens, draft_probs, target_probs, generator, no_cumprod=True)
