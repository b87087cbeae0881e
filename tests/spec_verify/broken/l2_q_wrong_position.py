"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'read at the wrong position'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: the acceptance ratio reads q at position i - 1."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator, q_prev=True)
