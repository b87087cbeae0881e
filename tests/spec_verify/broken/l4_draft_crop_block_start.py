"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
CASE = "greedy-k4"
MESSAGE = "draft pass #"


def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: crops the draft's cache to the block's start instead of the accepted length, so the
    next block re-runs the accepted drafts through the draft (right output, wasted passes)."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, draft_crop_start=True)
