"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
CASE = "law-T1.0-k0"  # the one sampled case with k = 0
MESSAGE = "at temperature 1.0 the sampled tokens do not follow the target's sampling law"

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: with k = 0 ('no drafts, nothing to verify') the loop decodes greedily although a
    temperature asks for sampling."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, clip_to_budget=True, k0_greedy=True)
