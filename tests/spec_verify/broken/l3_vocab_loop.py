"""Broken on purpose (level 3): the grader must name this bug (see MESSAGE)."""

import torch

LEVEL = 3
CASE = "large-vocab"  # correct laws; only the timed case's gate can see it
MESSAGE = "too slow for this level: median_ratio"


def verify_batch(draft_tokens, draft_probs, target_probs, generator):
    """Bug: correct, but the residual max(0, p - q) is built in a Python loop over the vocabulary
    for each rejected row (the statement asks for vectorised code)."""
    b, k = draft_tokens.shape
    out = []
    for i in range(b):
        row = []
        for j in range(k):
            x = int(draft_tokens[i, j])
            u = float(torch.rand((), generator=generator))
            if u < float(target_probs[i, j, x]) / float(draft_probs[i, j, x]):
                row.append(x)
                continue
            res = [max(0.0, a - c) for a, c in zip(target_probs[i, j].tolist(),
                                                   draft_probs[i, j].tolist(), strict=True)]
            dist = torch.tensor(res) if sum(res) > 0 else target_probs[i, j]
            row.append(int(torch.multinomial(dist, 1, generator=generator)))
            break
        else:
            row.append(int(torch.multinomial(target_probs[i, k], 1, generator=generator)))
        out.append(row)
    return out
