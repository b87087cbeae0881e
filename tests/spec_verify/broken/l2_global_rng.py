"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'global RNG instead of the generator'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: the acceptance coins come from torch's global RNG."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator, global_rng=True)
