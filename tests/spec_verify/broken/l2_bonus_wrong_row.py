"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = "last row of target_probs"


def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: the bonus token is drawn from p_k (row k - 1) instead of p_{k+1} (row k)."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator,
                              bonus_row_k=True)
