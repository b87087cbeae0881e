"""The expected tokens of a target case, from the model's own forward.

The reference engine runs through the same step wrapper (`runtime.HFStepModel`) as the
learner's, so a wrapper bug (a sliding-window cache that loses its length, a mask that slides
over padding) would make both wrong the same way and grading would still pass. The ground truth
is therefore each request alone, decoded greedily by transformers' forward over its whole
sequence at every step: no cache, no padding, no wrapper. It is part of the case's expected
value (`grading.expected`), so with a learner's own `--target` it is computed in the grader's
sandboxed models child, never in the grader's process; per step it also keeps the top-1/top-2
margin and the runner-up, which the near-tie excuse reads.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=256)
def solo_greedy(target: str | None, prompt: tuple[int, ...], max_tokens: int,
                stop_ids: tuple[int, ...], stop_seqs: tuple[tuple[int, ...], ...]
                ) -> tuple[tuple[int, ...], str, tuple[float, ...], tuple[int, ...]]:
    """(tokens, finish reason, top-1 minus top-2 logit per step, runner-up per step) of one
    request decoded alone: a stop token or sequence is included and checked before max_tokens;
    max_tokens 0 gives no token and "length"."""
    import torch

    from lab.exercises.batch_engine.runtime import load_target

    out: list[int] = []
    gaps: list[float] = []
    second: list[int] = []
    if max_tokens <= 0:
        return (), "length", (), ()
    model = load_target("cpu", "float32", target).model
    while True:
        with torch.inference_mode():
            ids = torch.tensor([[*prompt, *out]], dtype=torch.long)
            logits = model(input_ids=ids, use_cache=False).logits[0, -1]
        top = logits.float().topk(2)
        t = int(top.indices[0])
        out.append(t)
        gaps.append(float(top.values[0] - top.values[1]))
        second.append(int(top.indices[1]))
        reason = ("stop" if t in stop_ids or any(s and tuple(out[-len(s):]) == s
                                                 for s in stop_seqs)
                  else "length" if len(out) >= max_tokens else "")
        if reason:
            return tuple(out), reason, tuple(gaps), tuple(second)


def solo_truths(run: dict[str, Any]) -> list[list[Any] | None]:
    """Per request of a target case's reference run (in the order the checks index them:
    by arrival time), its solo greedy decoding as [tokens, reason, gaps, runner-ups]; None for
    a request that has none (an empty prompt, a negative max_tokens)."""
    target = run.get("target")
    out: list[list[Any] | None] = []
    for r in sorted(run["requests"], key=lambda r: r["t"]):
        if r["max_tokens"] >= 0 and r["prompt"]:
            solo = solo_greedy(target, tuple(r["prompt"]), r["max_tokens"],
                               tuple(r.get("stop_ids", ())),
                               tuple(tuple(s) for s in r.get("stop_seqs", ())))
            out.append([list(solo[0]), solo[1], list(solo[2]), list(solo[3])])
        else:
            out.append(None)
    return out
