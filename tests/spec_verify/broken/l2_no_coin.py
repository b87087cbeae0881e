"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'no coin when p > q'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: accepts exactly when p >= q, without the min(1, p/q) coin."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator, no_coin=True)
