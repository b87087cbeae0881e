"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
MESSAGE = "recomputes the cached prefix"

def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: every block calls target.reset() and re-runs the whole sequence plus the drafts
    (correct output, no KV-cache reuse; reset() also zeroes the model's own counters)."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, reset_recompute=True)
