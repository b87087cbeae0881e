"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'bonus token sampled even after a rejection'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: appends a bonus token from p_{k+1} even after a rejection."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator,
                              bonus_always=True)
