"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
MESSAGE = "after the output was complete"


def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: the loop runs on one token past max_new_tokens (often one more block) and cuts the
    output afterwards: the right tokens, a target pass too many."""
    out = _base.generate(target, draft, prompt_ids, max_new_tokens + 1, k, temperature,
                         generator, eos_token_id)
    return out[:max_new_tokens]
