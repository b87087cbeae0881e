"""Broken on purpose (level 2): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 2
MESSAGE = "it must be accepted"


def verify_sampling(draft_tokens, draft_probs, target_probs, generator):
    """Bug: accepts with min(1, q/p) instead of min(1, p/q)."""
    return _base.sample_block(draft_tokens, draft_probs, target_probs, generator,
                              ratio_inverted=True)
