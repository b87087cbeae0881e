"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
MESSAGE = 'fed the correction/bonus token'

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: the draft is fed only the newest token, so after an all-accepted block it never sees
    its own last drafted token (output stays right, acceptance drops)."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, feed_last_only=True)
