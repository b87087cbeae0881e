"""The expected tokens of a target case, from the model's own forward (parent side).

The reference engine runs through the same step wrapper (`runtime.HFStepModel`) as the
learner's, so a wrapper bug (a sliding-window cache that loses its length, a mask that slides
over padding) would make both wrong the same way and grading would still pass. The ground truth
is therefore each request alone, decoded greedily by transformers' forward over its whole
sequence at every step: no cache, no padding, no wrapper.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=256)
def solo_greedy(target: str | None, prompt: tuple[int, ...], max_tokens: int,
                stop_ids: tuple[int, ...], stop_seqs: tuple[tuple[int, ...], ...]
                ) -> tuple[tuple[int, ...], str]:
    """(tokens, finish reason) of one request decoded alone: a stop token or sequence is
    included and checked before max_tokens; max_tokens 0 gives no token and "length"."""
    import torch

    from lab.exercises.batch_engine.runtime import load_target

    out: list[int] = []
    if max_tokens <= 0:
        return (), "length"
    model = load_target("cpu", "float32", target).model
    while True:
        with torch.inference_mode():
            ids = torch.tensor([[*prompt, *out]], dtype=torch.long)
            logits = model(input_ids=ids, use_cache=False).logits[0, -1]
        t = int(logits.float().argmax())
        out.append(t)
        if t in stop_ids or any(s and tuple(out[-len(s):]) == s for s in stop_seqs):
            return tuple(out), "stop"
        if len(out) >= max_tokens:
            return tuple(out), "length"
