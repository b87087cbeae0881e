"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
MESSAGE = "more than one target pass per block"

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: each block scores the last committed token in one target pass and the drafts in a
    second (correct output, twice the target passes)."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, two_target_passes=True)
