"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'bonus token dropped'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: no bonus token when all k drafted tokens are accepted."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator, drop_bonus=True)
