"""Reference for the sampling exercise: logits processors, a batched sampler, per-request seeds,
and an OpenAI-style generation loop with stop strings and log-probabilities.

Level 1 IS transformers: the penalties and warpers `generate` would build for the same
parameters (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper,
TopPLogitsWarper, MinPLogitsWarper), gated exactly as `generate` gates them, plus what
transformers has no processor for (OpenAI's presence/frequency penalties, T = 0 as greedy) and
one rule it leaves to torch.sort's unstable order (ties at the top-p cut are all kept). The
contract, cell by cell: lab/exercises/sampling/CONTRACT.md. Levels 2-4 are vectorised code that
must equal level 1 row by row, bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch

NEG_INF = float("-inf")
DEFAULTS: dict[str, float] = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                              "repetition_penalty": 1.0, "presence_penalty": 0.0,
                              "frequency_penalty": 0.0}


def _param(params: dict[str, Any], name: str) -> float:
    return float(params.get(name, DEFAULTS[name]))


# -- level 1: one row -------------------------------------------------------------------------


def process_logits(logits: torch.Tensor, params: dict[str, Any], prompt: list[int],
                   output: list[int]) -> torch.Tensor:
    """The processed logits of one row [V] (a new tensor; filtered ids are -inf).

    Order: repetition penalty (prompt + output ids), frequency then presence penalty (output
    ids), then temperature (T = 0: greedy), top-k, top-p, min-p - what `generate` and vLLM do.
    """
    from transformers import (
        MinPLogitsWarper,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    v = logits.shape[-1]
    scores = logits.reshape(1, v).clone()
    rep = _param(params, "repetition_penalty")
    history = [*prompt, *output]
    if rep != 1.0 and history:
        ids = torch.tensor([history], dtype=torch.long, device=scores.device)
        scores = RepetitionPenaltyLogitsProcessor(rep)(ids, scores)
    freq, pres = _param(params, "frequency_penalty"), _param(params, "presence_penalty")
    if (freq != 0.0 or pres != 0.0) and output:
        counts = torch.bincount(torch.tensor(output, dtype=torch.long, device=scores.device),
                                minlength=v)[:v].to(scores.dtype)
        scores = scores - freq * counts - pres * (counts > 0).to(scores.dtype)
    temp = _param(params, "temperature")
    if temp == 0.0:  # greedy: the (first) argmax alone survives, at its penalised value
        best = int(scores[0].argmax())
        out = torch.full_like(scores, NEG_INF)
        out[0, best] = scores[0, best]
        return out.reshape(v)
    if temp != 1.0:
        scores = TemperatureLogitsWarper(temp)(None, scores)
    k = int(_param(params, "top_k"))
    if k > 0:
        scores = TopKLogitsWarper(k)(None, scores)
    p = _param(params, "top_p")
    if p < 1.0:
        cut = TopPLogitsWarper(p)(None, scores)
        kept = scores[cut != NEG_INF]  # ties at the cut: every id tied with the last kept stays
        scores = scores.masked_fill(scores < kept.min(), NEG_INF) if kept.numel() else cut
    mp = _param(params, "min_p")
    if mp > 0.0:
        scores = MinPLogitsWarper(mp)(None, scores)  # type: ignore[arg-type]
    return scores.reshape(v)


# -- level 2: a batch, one parameter set per row ----------------------------------------------


def _flat(ids: list[list[int]], rows: list[int], v: int, device: Any) -> torch.Tensor:
    """Flat indices row * V + id of every listed row's ids (duplicates kept)."""
    flat = [r * v + t for r in rows for t in ids[r]]
    return torch.tensor(flat, dtype=torch.long, device=device)


def _take(scores: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """The rows a stage works on: the tensor itself when that is every row (no copy)."""
    return scores if len(rows) == scores.shape[0] else scores[rows]


def _put(scores: torch.Tensor, rows: list[int], new: torch.Tensor) -> torch.Tensor:
    if len(rows) == scores.shape[0]:
        return new
    scores[rows] = new
    return scores


def process_batch(logits: torch.Tensor, params: list[dict[str, Any]],
                  prompts: list[list[int]], outputs: list[list[int]]) -> torch.Tensor:
    """Level 1 on every row [B, V] at once, each row with its own parameters (no loop over
    ids, one op per stage over the rows that use it): equal to `process_logits` row by row,
    bit for bit. Penalties touch only the ids a row has seen (gather/scatter, as transformers
    does), so their cost is the history's length, not B x V."""
    scores = logits.clone()
    if not logits.shape[0]:
        return scores
    _penalise(scores, params, prompts, outputs)
    # T = 0: the first argmax of the penalised row alone (applied last, over the warpers)
    greedy = [r for r, p in enumerate(params) if _param(p, "temperature") == 0.0]
    if greedy:
        g_rows = scores[greedy]
        best = g_rows.argmax(dim=1, keepdim=True)
        one_hot = torch.full_like(g_rows, NEG_INF).scatter(1, best, g_rows.gather(1, best))
    for warp in (_temperature, _top_k, _top_p, _min_p):
        scores = warp(scores, params)
    if greedy:
        scores[greedy] = one_hot
    return scores


def _penalise(scores: torch.Tensor, params: list[dict[str, Any]], prompts: list[list[int]],
              outputs: list[list[int]]) -> None:
    """The repetition penalty over each row's prompt + output ids, then the frequency and
    presence penalties over its output ids, in place."""
    v = scores.shape[1]
    flat = scores.view(-1)
    dev = scores.device
    rows = [r for r, p in enumerate(params) if _param(p, "repetition_penalty") != 1.0]
    hist = [[*p, *o] for p, o in zip(prompts, outputs, strict=True)]
    idx = torch.unique(_flat(hist, rows, v, dev))
    if idx.numel():
        rep = torch.tensor([_param(p, "repetition_penalty") for p in params], dtype=scores.dtype,
                           device=dev)[idx // v]
        got = flat[idx]
        flat[idx] = torch.where(got < 0, got * rep, got / rep)
    rows = [r for r, p in enumerate(params)
            if _param(p, "frequency_penalty") != 0.0 or _param(p, "presence_penalty") != 0.0]
    idx, counts = torch.unique(_flat(outputs, rows, v, dev), return_counts=True)
    if idx.numel():
        row_of = idx // v
        freq = torch.tensor([_param(p, "frequency_penalty") for p in params],
                            dtype=scores.dtype, device=dev)[row_of]
        pres = torch.tensor([_param(p, "presence_penalty") for p in params],
                            dtype=scores.dtype, device=dev)[row_of]
        c = counts.to(scores.dtype)
        flat[idx] = flat[idx] - freq * c - pres * (c > 0).to(scores.dtype)


def _temperature(scores: torch.Tensor, params: list[dict[str, Any]]) -> torch.Tensor:
    rows = [r for r, p in enumerate(params) if _param(p, "temperature") not in (0.0, 1.0)]
    if rows:
        temp = torch.tensor([_param(params[r], "temperature") for r in rows],
                            dtype=scores.dtype, device=scores.device).unsqueeze(1)
        scores = _put(scores, rows, _take(scores, rows) / temp)
    return scores


def _top_k(scores: torch.Tensor, params: list[dict[str, Any]]) -> torch.Tensor:
    """Keep logits >= the k-th largest (ties at the cut kept); k <= 0 or k >= V keeps all."""
    ks = [int(_param(p, "top_k")) for p in params]
    rows = [r for r, k in enumerate(ks) if 0 < k < scores.shape[1]]
    if rows:
        sub = _take(scores, rows)
        kk = torch.tensor([ks[r] for r in rows], device=scores.device).unsqueeze(1)
        kth = sub.topk(int(kk.max()), dim=1).values.gather(1, kk - 1)
        scores = _put(scores, rows, sub.masked_fill(sub < kth, NEG_INF))
    return scores


def _top_p(scores: torch.Tensor, params: list[dict[str, Any]]) -> torch.Tensor:
    """transformers' ascending cumulative rule, then ties at the cut kept."""
    rows = [r for r, p in enumerate(params) if _param(p, "top_p") < 1.0]
    if rows:
        sub = _take(scores, rows)
        sorted_logits, order = torch.sort(sub, descending=False)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        limit = torch.tensor([1 - _param(params[r], "top_p") for r in rows],
                             dtype=torch.float64).to(sub.dtype).to(sub.device).unsqueeze(1)
        drop_sorted = cum <= limit
        drop_sorted[:, -1] = False
        drop = drop_sorted.scatter(1, order, drop_sorted)
        kept_min = torch.where(drop, float("inf"), sub).amin(dim=1, keepdim=True)
        scores = _put(scores, rows, sub.masked_fill(sub < kept_min, NEG_INF))
    return scores


def _min_p(scores: torch.Tensor, params: list[dict[str, Any]]) -> torch.Tensor:
    """Drop probs < min_p * max prob, keep the top token."""
    rows = [r for r, p in enumerate(params) if _param(p, "min_p") > 0.0]
    if rows:
        sub = _take(scores, rows)
        probs = sub.softmax(dim=-1)
        min_p = torch.tensor([_param(params[r], "min_p") for r in rows], dtype=sub.dtype,
                             device=sub.device).unsqueeze(1)
        drop = probs < min_p * probs.amax(dim=-1, keepdim=True)
        drop.scatter_(1, probs.topk(1, dim=-1).indices, False)
        scores = _put(scores, rows, sub.masked_fill(drop, NEG_INF))
    return scores


# -- level 3: sampling, one generator per request ---------------------------------------------


def sample(logits: torch.Tensor, params: list[dict[str, Any]], prompts: list[list[int]],
           outputs: list[list[int]], generators: list[torch.Generator]) -> list[int]:
    """One token per row: argmax where T = 0 (no draw), otherwise one
    `torch.multinomial(softmax(row), 1, generator=g)` with the row's own generator."""
    scores = process_batch(logits, params, prompts, outputs)
    probs = scores.softmax(dim=-1)
    best = scores.argmax(dim=-1).tolist()
    out = []
    for r, g in enumerate(generators):
        if _param(params[r], "temperature") == 0.0:
            out.append(int(best[r]))
        else:
            out.append(int(torch.multinomial(probs[r], 1, generator=g)))
    return out


# -- level 4: generation with stop strings and log-probabilities ------------------------------


def _entry(model: Any, token: int, logprob: float) -> dict[str, Any]:
    return {"token": model.token_str(token), "logprob": logprob}


def generate(model: Any, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decode every request to its end (EOS, a stop string, or max_tokens), all rows stepped
    together; finished rows leave the batch. Log-probabilities are the model's raw ones."""
    prompts = [model.encode(r["prompt"]) for r in requests]
    gens = []
    for r in requests:
        g = torch.Generator(device=model.device)
        g.manual_seed(int(r["seed"]))
        gens.append(g)
    outs: list[list[int]] = [[] for _ in requests]
    content: list[list[dict[str, Any]]] = [[] for _ in requests]
    result: list[dict[str, Any] | None] = [None] * len(requests)
    live = [i for i, r in enumerate(requests) if int(r["max_tokens"]) > 0]
    for i, r in enumerate(requests):
        if int(r["max_tokens"]) <= 0:
            result[i] = _finish("", [], "length", [])
    while live:
        raw = model.next_logits([prompts[i] + outs[i] for i in live])
        toks = sample(raw, [requests[i] for i in live], [prompts[i] for i in live],
                      [outs[i] for i in live], [gens[i] for i in live])
        logp = raw.float().log_softmax(dim=-1)
        still = []
        for row, i in enumerate(live):
            result[i] = _append(model, requests[i], toks[row], logp[row], outs[i], content[i])
            if result[i] is None:
                still.append(i)
        live = still
    return [r for r in result if r is not None]


def _append(model: Any, req: dict[str, Any], tok: int, logp: torch.Tensor, out: list[int],
            content: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Add a sampled token (and its log-probabilities) to a request's output; the finished
    result when it ends the request (EOS, a stop string, max_tokens), else None."""
    out.append(tok)
    entry = _entry(model, tok, float(logp[tok]))
    n = int(req.get("top_logprobs", 0))
    if n > 0:
        entry["top_logprobs"] = [_entry(model, t, lp) for t, lp in _top(logp, n)]
    content.append(entry)
    text = model.decode(out)
    cut = _stop_at(text, req.get("stop", []))
    if tok == model.eos_token_id or cut is not None:
        return _finish(text if cut is None else text[:cut], out, "stop", content)
    if len(out) >= int(req["max_tokens"]):
        return _finish(text, out, "length", content)
    return None


def _top(logp: torch.Tensor, n: int) -> list[tuple[int, float]]:
    """The n largest log-probabilities, ties broken by the lower id."""
    values, ids = torch.sort(logp, descending=True, stable=True)
    return [(int(t), float(x)) for t, x in zip(ids[:n].tolist(), values[:n].tolist(),
                                                strict=True)]


def _stop_at(text: str, stops: list[str]) -> int | None:
    hits = [text.find(s) for s in stops if s and s in text]
    return min(hits) if hits else None


def _finish(text: str, tokens: list[int], reason: str, content: list[dict[str, Any]]
            ) -> dict[str, Any]:
    return {"text": text, "token_ids": list(tokens), "finish_reason": reason,
            "logprobs": {"content": content}}
