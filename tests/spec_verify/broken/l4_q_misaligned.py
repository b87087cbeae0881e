"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
CASE = "3tok"  # with 2 tokens a budget-clipped loop drafts 1 token: one q row cannot misalign
MESSAGE = "do not follow the target's sampling law"

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: drafts clipped to the budget like the reference, but each q row is inserted at the
    front of the list, so q_i is paired with the wrong drafted token once a block drafts 2+."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, clip_to_budget=True, q_misaligned=True)
