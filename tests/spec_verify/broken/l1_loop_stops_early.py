"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

import torch

LEVEL = 1
MESSAGE = "the accept loop stopped one draft short"


def verify_greedy(draft_tokens: list[int], target_logits: torch.Tensor) -> list[int]:
    """Bug: checks at most the first 7 drafts (a hard-wired bound), then takes the next row's
    argmax as the bonus."""
    out: list[int] = []
    for i, x in enumerate(draft_tokens[:7]):
        best = int(target_logits[i].argmax())
        if x != best:
            return [*out, best]
        out.append(x)
    return [*out, int(target_logits[len(out)].argmax())]
