"""One row's processing with a switch per classic mistake: what names a bug in a message.

`process(row, params, prompt, output, bug)` with `bug=None` is the contract (equal to the
reference bit for bit: tests/sampling/test_reference.py); each other key of `BUGS` is one
mistake a learner makes, computed the way that mistake computes it. Level 1-2 checks name the
first bug whose output equals the learner's; level 3 uses the same rows' laws to state the
chi-square case's power against each bug.
"""

from __future__ import annotations

from typing import Any

import torch

NEG_INF = float("-inf")
SMALL_TEMP = 0.01  # below it, `small_temp_greedy` goes greedy (vLLM's own epsilon is 1e-5)

# bug key -> what the message says (the fix is in the sentence)
BUGS: dict[str, str] = {
    "penalty_after_temperature": "the penalties ran after temperature: apply repetition, "
    "frequency and presence penalties to the raw logits, then temperature (transformers' and "
    "vLLM's order)",
    "topp_drops_crossing": "top-p dropped the token whose probability crosses p: keep the "
    "smallest set whose mass REACHES p (the crossing token is in it)",
    "topp_strict_threshold": "top-p's cut compared with < : an id whose ascending cumulative "
    "mass equals 1 - top_p exactly is dropped too (transformers removes mass <= 1 - top_p)",
    "topp_ties_arbitrary": "ties at the top-p cut: every id tied with the last kept logit stays "
    "(transformers keeps an arbitrary subset, decided by torch.sort's unstable order)",
    "topp_raw_logits": "top-p ranked the untempered logits: temperature comes first, top-p "
    "sees softmax(logits / T)",
    "topp_at_one": "top_p = 1 must change nothing (generate() skips the warper; the warper "
    "itself would drop ids whose probability underflows to 0)",
    "topk_exact": "top-k kept exactly k ids: ids tied with the k-th largest logit stay too "
    "(transformers removes only logits < the k-th value)",
    "topk_off_by_one": "top-k kept k + 1 ids (or k - 1): the k-th largest logit is "
    "topk(k).values[-1]",
    "topk_zero_keeps_none": "top_k = 0 means off (keep every id), as top_k >= V does",
    "minp_le_threshold": "min-p's cut compared with <= : an id whose probability equals "
    "min_p x the top probability exactly stays (transformers drops only p < min_p x p_max)",
    "minp_absolute": "min-p compared probabilities with min_p itself: the threshold is "
    "min_p x the top probability",
    "minp_before_topp": "min-p ran before top-p: the order is top-k, top-p, then min-p (each "
    "on the survivors of the one before)",
    "rep_divides_all": "repetition penalty divided every seen logit: the transformers rule "
    "divides positive logits and MULTIPLIES negative ones by the penalty",
    "rep_output_only": "repetition penalty skipped the prompt: it applies to every id in "
    "prompt + output",
    "rep_per_occurrence": "repetition penalty applied once per occurrence: an id seen twice "
    "is penalised once",
    "freq_ignores_counts": "frequency penalty ignored the counts: subtract frequency x (times "
    "the id occurs in the output)",
    "pres_per_occurrence": "presence penalty counted occurrences: it is subtracted once per id "
    "that occurs in the output",
    "penalties_count_prompt": "presence/frequency counted the prompt: OpenAI's rule counts "
    "only the generated output",
    "greedy_raw_argmax": "T = 0 took the argmax of the raw logits: the penalties apply first, "
    "greedy picks the argmax of the penalised row",
    "greedy_keeps_ties": "T = 0 kept every id tied for the top: greedy keeps one id, the "
    "first (lowest) argmax",
    "temperature_multiplies": "temperature multiplied the logits: divide by T",
    "small_temp_greedy": "a positive temperature was treated as greedy: only T = 0 is greedy; "
    "any T > 0, however small (1e-3, 1e-6: no epsilon), divides the logits, as "
    "TemperatureLogitsWarper does",
    "no_processing": "the row came back unprocessed",
}


def _p(params: dict[str, Any], name: str, default: float) -> float:
    return float(params.get(name, default))


def process(row: torch.Tensor, params: dict[str, Any], prompt: list[int], output: list[int],
            bug: str | None = None) -> torch.Tensor:
    """Process one row [V] as the contract says, or with `bug`."""
    if bug == "no_processing":
        return row.clone()
    v = row.shape[-1]
    x = row.reshape(1, v).clone()
    temp = _p(params, "temperature", 1.0)
    if bug == "penalty_after_temperature" and temp not in (0.0, 1.0):
        x = x / temp
    rep = _p(params, "repetition_penalty", 1.0)
    hist = list(output) if bug == "rep_output_only" else [*prompt, *output]
    if rep != 1.0 and hist:
        ids = hist if bug == "rep_per_occurrence" else sorted(set(hist))
        for t in ids:
            val = x[0, t]
            if bug == "rep_divides_all" or not bool(val < 0):
                x[0, t] = val / rep
            else:
                x[0, t] = val * rep
    freq, pres = _p(params, "frequency_penalty", 0.0), _p(params, "presence_penalty", 0.0)
    counted = [*prompt, *output] if bug == "penalties_count_prompt" else list(output)
    if (freq != 0.0 or pres != 0.0) and counted:
        c = torch.bincount(torch.tensor(counted, dtype=torch.long), minlength=v)[:v]
        c = c.to(x.dtype).to(x.device)
        f_c = (c > 0).to(x.dtype) if bug == "freq_ignores_counts" else c
        p_c = c if bug == "pres_per_occurrence" else (c > 0).to(x.dtype)
        x = x - freq * f_c - pres * p_c
    if temp == 0.0 or (bug == "small_temp_greedy" and temp < SMALL_TEMP):
        src = row.reshape(1, v) if bug == "greedy_raw_argmax" else x
        best = int(src[0].argmax())
        if bug == "greedy_keeps_ties":
            return torch.where(x[0] == x[0].max(), x[0], NEG_INF)
        out = torch.full_like(x, NEG_INF)
        out[0, best] = x[0, best]
        return out.reshape(v)
    untempered = x.clone()
    if temp != 1.0 and bug != "penalty_after_temperature":
        x = x * temp if bug == "temperature_multiplies" else x / temp
    k = int(_p(params, "top_k", 0))
    if k == 0 and bug == "topk_zero_keeps_none":
        x = torch.full_like(x, NEG_INF)
    if 0 < k < v:
        if bug == "topk_exact":
            keep = torch.zeros_like(x, dtype=torch.bool)
            keep[0, x[0].topk(k).indices] = True
            x = x.masked_fill(~keep, NEG_INF)
        else:
            kk = min(k + 1, v) if bug == "topk_off_by_one" else k
            x = x.masked_fill(x < x.topk(kk, dim=-1).values[..., -1:], NEG_INF)
    mp = _p(params, "min_p", 0.0)
    if bug == "minp_before_topp" and mp > 0.0:
        x = _min_p(x, mp, bug)
    top_p = _p(params, "top_p", 1.0)
    if top_p < 1.0 or bug == "topp_at_one":
        x = _top_p(x, untempered, top_p, bug)
    if mp > 0.0 and bug != "minp_before_topp":
        x = _min_p(x, mp, bug)
    return x.reshape(v)


def _top_p(x: torch.Tensor, untempered: torch.Tensor, top_p: float, bug: str | None
           ) -> torch.Tensor:
    basis = untempered if bug == "topp_raw_logits" else x
    sorted_logits, order = torch.sort(basis, descending=False)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    if bug == "topp_drops_crossing":  # keep only ids strictly inside mass p (at least one)
        desc, down = torch.sort(basis.softmax(-1), descending=True)
        inside = desc.cumsum(-1) < top_p
        inside[..., 0] = True
        keep = torch.zeros_like(inside).scatter(1, down, inside)
        return x.masked_fill(~keep, NEG_INF)
    drop_sorted = cum < (1 - top_p) if bug == "topp_strict_threshold" else cum <= (1 - top_p)
    drop_sorted[..., -1] = False
    drop = drop_sorted.scatter(1, order, drop_sorted)
    if bug in ("topp_ties_arbitrary", "topp_at_one"):
        return x.masked_fill(drop, NEG_INF)
    kept = basis[~drop & (x != NEG_INF)]
    if not kept.numel():
        return x.masked_fill(drop, NEG_INF)
    return x.masked_fill(basis < kept.min(), NEG_INF)


def _min_p(x: torch.Tensor, mp: float, bug: str | None) -> torch.Tensor:
    probs = torch.softmax(x, dim=-1)
    thr = torch.tensor(mp, dtype=x.dtype) if bug == "minp_absolute" else (
        mp * probs.amax(dim=-1, keepdim=True))
    drop = probs <= thr if bug == "minp_le_threshold" else probs < thr
    drop.scatter_(-1, torch.topk(probs, 1, dim=-1).indices, False)
    return x.masked_fill(drop, NEG_INF)


def name_bug(got: torch.Tensor, row: torch.Tensor, params: dict[str, Any], prompt: list[int],
             output: list[int]) -> str | None:
    """The listed mistakes whose output equals `got` (and differs from the contract's): the
    first, and the others that fit as alternatives (on one row, min-p before top-p can look
    exactly like a top-p cut that dropped its crossing token)."""
    want = process(row, params, prompt, output)
    found = []
    for bug, text in BUGS.items():
        try:
            alt = process(row, params, prompt, output, bug)
        except (RuntimeError, IndexError, ValueError):
            continue
        if not torch.equal(alt, want) and torch.equal(alt, got):
            found.append(text)
    if not found:
        return None
    return found[0] + "".join(f" (or: {text})" for text in found[1:])
