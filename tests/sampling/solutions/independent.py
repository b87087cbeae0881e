"""A learner's full answer written from the statement alone (masks over all rows, no row
subsets, no transformers): what shows that the bit-for-bit levels accept code other than the
reference's (test_grading.py grades it through every level)."""

from __future__ import annotations

from typing import Any

import torch

NEG = float("-inf")
DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
            "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}


def _col(params: list[dict[str, Any]], name: str, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor([float(p.get(name, DEFAULTS[name])) for p in params],
                        dtype=like.dtype, device=like.device)[:, None]


def process_logits(logits: torch.Tensor, params: dict[str, Any], prompt: list[int],
                   output: list[int]) -> torch.Tensor:
    return process_batch(logits[None], [params], [prompt], [output])[0]


def process_batch(logits: torch.Tensor, params: list[dict[str, Any]],
                  prompts: list[list[int]], outputs: list[list[int]]) -> torch.Tensor:
    b, v = logits.shape
    dev = logits.device
    x = logits.clone()
    # counts[b, id] over the output, seen[b, id] over prompt + output
    counts = torch.zeros(b, v, dtype=x.dtype, device=dev)
    seen = torch.zeros(b, v, dtype=torch.bool, device=dev)
    for r in range(b):  # building the index lists is per row; the math below is not
        if outputs[r]:
            counts[r].index_add_(0, torch.tensor(outputs[r], device=dev),
                                 torch.ones(len(outputs[r]), dtype=x.dtype, device=dev))
        ids = [*prompts[r], *outputs[r]]
        if ids:
            seen[r, torch.tensor(ids, device=dev)] = True
    rep = _col(params, "repetition_penalty", x)
    x = torch.where(seen & (rep != 1.0), torch.where(x < 0, x * rep, x / rep), x)
    freq, pres = _col(params, "frequency_penalty", x), _col(params, "presence_penalty", x)
    x = torch.where((freq != 0) | (pres != 0), x - freq * counts - pres * (counts > 0).to(x.dtype),
                    x)
    temp = _col(params, "temperature", x)
    greedy = (temp == 0.0).squeeze(1)
    best = x.argmax(dim=1, keepdim=True)
    one_hot = torch.full_like(x, NEG).scatter(1, best, x.gather(1, best))
    x = torch.where(temp == 1.0, x, x / torch.where(temp == 0.0, torch.ones_like(temp), temp))
    k = torch.tensor([int(p.get("top_k", 0)) for p in params], device=dev)[:, None]
    on_k = (k > 0) & (k < v)
    if bool(on_k.any()):
        top = x.topk(int(k[on_k].max()), dim=1).values
        kth = top.gather(1, (k.clamp(1, top.shape[1]) - 1))
        x = torch.where(on_k & (x < kth), NEG, x)
    top_p = [float(p.get("top_p", 1.0)) for p in params]
    on_p = torch.tensor([tp < 1.0 for tp in top_p], device=dev)[:, None]
    if bool(on_p.any()):
        asc, order = torch.sort(x, dim=1)
        cum = asc.softmax(dim=1).cumsum(dim=1)
        limit = torch.tensor([1 - tp for tp in top_p], device=dev).to(x.dtype)[:, None]
        drop = cum <= limit
        drop[:, -1] = False
        drop = torch.zeros_like(drop).scatter(1, order, drop)
        lowest = torch.where(drop, torch.inf, x).amin(dim=1, keepdim=True)
        x = torch.where(on_p & (x < lowest), NEG, x)
    mp = _col(params, "min_p", x)
    if bool((mp > 0).any()):
        probs = x.softmax(dim=1)
        drop = probs < mp * probs.amax(dim=1, keepdim=True)
        drop.scatter_(1, probs.argmax(dim=1, keepdim=True), False)
        x = torch.where((mp > 0) & drop, NEG, x)
    return torch.where(greedy[:, None], one_hot, x)


def sample(logits: torch.Tensor, params: list[dict[str, Any]], prompts: list[list[int]],
           outputs: list[list[int]], generators: list[torch.Generator]) -> list[int]:
    x = process_batch(logits, params, prompts, outputs)
    probs = torch.softmax(x, dim=-1)
    tokens = []
    for r, g in enumerate(generators):
        if float(params[r].get("temperature", 1.0)) == 0.0:
            tokens.append(int(x[r].argmax()))
        else:
            tokens.append(int(torch.multinomial(probs[r], 1, generator=g).item()))
    return tokens


def generate(model: Any, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    state = []
    for req in requests:
        g = torch.Generator(device=model.device)
        g.manual_seed(int(req["seed"]))
        state.append({"req": req, "prompt": model.encode(req["prompt"]), "out": [], "gen": g,
                      "content": [], "done": None})
    for s in state:
        if int(s["req"]["max_tokens"]) == 0:
            s["done"] = ("", "length")
    while True:
        live = [s for s in state if s["done"] is None]
        if not live:
            break
        raw = model.next_logits([s["prompt"] + s["out"] for s in live])
        toks = sample(raw, [s["req"] for s in live], [s["prompt"] for s in live],
                      [s["out"] for s in live], [s["gen"] for s in live])
        logp = torch.log_softmax(raw.float(), dim=-1)
        for row, (s, tok) in enumerate(zip(live, toks, strict=True)):
            s["out"].append(tok)
            entry: dict[str, Any] = {"token": model.token_str(tok),
                                     "logprob": float(logp[row, tok])}
            n = int(s["req"].get("top_logprobs", 0))
            if n:
                vals, ids = torch.sort(logp[row], descending=True, stable=True)
                entry["top_logprobs"] = [{"token": model.token_str(int(t)), "logprob": float(lp)}
                                         for t, lp in zip(ids[:n], vals[:n], strict=True)]
            s["content"].append(entry)
            text = model.decode(s["out"])
            hits = [text.index(st) for st in s["req"].get("stop", []) if st and st in text]
            if tok == model.eos_token_id:
                s["done"] = (text, "stop")
            elif hits:
                s["done"] = (text[: min(hits)], "stop")
            elif len(s["out"]) >= int(s["req"]["max_tokens"]):
                s["done"] = (text, "length")
    return [{"text": s["done"][0], "token_ids": s["out"], "finish_reason": s["done"][1],
             "logprobs": {"content": s["content"]}} for s in state]
