"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = 'resampling from p instead of the residual'

def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: on rejection, resamples from p instead of norm(max(0, p - q))."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator, resample_p=True)
