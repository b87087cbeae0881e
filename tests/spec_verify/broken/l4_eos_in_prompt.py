"""Broken on purpose (level 4): the grader must name this bug (see MESSAGE)."""

from tests.spec_verify.broken import _base

LEVEL = 4
CASE = "in-prompt"
MESSAGE = "the prompt holds EOS"


def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                         generator=None, eos_token_id=None):
    """Bug: checks for EOS in the whole sequence, so an EOS id inside the prompt ends the
    generation after the first block."""
    return _base.generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                          eos_token_id, eos_in_seq=True)
