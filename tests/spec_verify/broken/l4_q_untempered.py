"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
CASE = "law-untempered"  # a strong temperature: raw and warped q differ a lot
MESSAGE = "do not follow the target's sampling law"

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: drafts are sampled at temperature T but q is taken from the raw (T = 1) logits."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, q_untempered=True)
