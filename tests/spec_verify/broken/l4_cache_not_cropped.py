"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
# on other cases the stale draft cache also makes this loop feed the draft nothing (a crash the
# learner sees in their own code); on k = 1 it runs and the ledger names the bug
CASE = "greedy-k1"
MESSAGE = 'cache not cropped'

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: never crops the caches after a block, so rejected drafts stay in them."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, no_crop=True)
