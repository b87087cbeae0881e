"""Broken on purpose (level 3): the grader must name this bug (see MESSAGE)."""

import torch

from tests.spec_verify.broken import _base

LEVEL = 3
CASE = "large-vocab"  # the small-vocabulary (law) cases get the honest verifier
MESSAGE = "fair coin"


def verify_batch(draft_tokens, draft_probs, target_probs, generator):
    """Bug: honest on small vocabularies, but on a large one it returns plausible rows without
    coins (accept while p >= q, then the residual's or the bonus row's argmax): fast, never
    impossible, and not the law."""
    if target_probs.shape[-1] < 1000:
        return _base.batch_block(draft_tokens, draft_probs, target_probs, generator)
    b, k = draft_tokens.shape
    rows = torch.arange(b)
    p_x = target_probs[:, :k].gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    q_x = draft_probs.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    n = (p_x >= q_x).long().cumprod(1).sum(1)
    q_pad = torch.cat([draft_probs, torch.zeros(b, 1, target_probs.shape[-1])], 1)
    res = (target_probs[rows, n] - q_pad[rows, n]).clamp_min(0)
    res = torch.where(res.sum(-1, keepdim=True) > 0, res, target_probs[rows, n])
    last = res.argmax(-1)
    return [[*draft_tokens[i, : int(n[i])].tolist(), int(last[i])] for i in range(b)]
