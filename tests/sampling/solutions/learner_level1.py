"""A learner's level-1 answer written from the statement alone, without transformers: what the
test compares against transformers' own processors (test_learner_vs_transformers.py)."""

from __future__ import annotations

from typing import Any

import torch

NEG_INF = float("-inf")


def process_logits(logits: torch.Tensor, params: dict[str, Any], prompt: list[int],
                   output: list[int]) -> torch.Tensor:
    x = logits.clone()
    v = x.shape[0]
    rep = float(params.get("repetition_penalty", 1.0))
    if rep != 1.0:
        seen = torch.tensor(sorted(set(prompt) | set(output)), dtype=torch.long)
        if seen.numel():
            vals = x[seen]
            x[seen] = torch.where(vals < 0, vals * rep, vals / rep)
    freq = float(params.get("frequency_penalty", 0.0))
    pres = float(params.get("presence_penalty", 0.0))
    if (freq or pres) and output:
        counts = torch.bincount(torch.tensor(output), minlength=v).to(x.dtype)
        x = x - freq * counts - pres * (counts > 0).to(x.dtype)
    temp = float(params.get("temperature", 1.0))
    if temp == 0.0:
        out = torch.full_like(x, NEG_INF)
        best = int(torch.argmax(x))
        out[best] = x[best]
        return out
    if temp != 1.0:
        x = x / temp
    k = int(params.get("top_k", 0))
    if 0 < k < v:
        x = x.masked_fill(x < torch.topk(x, k).values[-1], NEG_INF)
    p = float(params.get("top_p", 1.0))
    if p < 1.0:
        asc, order = torch.sort(x)
        cum = torch.softmax(asc, -1).cumsum(-1)
        drop = cum <= 1 - p
        drop[-1] = False
        dropped = torch.zeros_like(drop).scatter(0, order, drop)
        kept = x[~dropped & (x != NEG_INF)]
        if kept.numel():
            x = x.masked_fill(x < kept.min(), NEG_INF)
    mp = float(params.get("min_p", 0.0))
    if mp > 0.0:
        probs = torch.softmax(x, -1)
        drop = probs < mp * probs.max()
        drop[torch.argmax(probs)] = False
        x = x.masked_fill(drop, NEG_INF)
    return x


def process_batch(*args: Any) -> torch.Tensor:
    raise NotImplementedError


def sample(*args: Any) -> list[int]:
    raise NotImplementedError


def generate(*args: Any) -> list[dict[str, Any]]:
    raise NotImplementedError
