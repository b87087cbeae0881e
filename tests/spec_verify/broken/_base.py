"""An independent, learner-style correct solution (not the reference), with switches for bugs.

Written the way a learner would (plain loops, torch.multinomial), so it also proves the grader
accepts correct code whose random-number use differs from the reference's. Each broken file
flips exactly one switch or overrides one function.
"""

from __future__ import annotations

from typing import Any

import torch


def verify_greedy(draft_tokens: list[int], target_logits: torch.Tensor) -> list[int]:
    out: list[int] = []
    for i, x in enumerate(draft_tokens):
        best = int(target_logits[i].argmax())
        if x != best:
            return [*out, best]
        out.append(x)
    return [*out, int(target_logits[len(draft_tokens)].argmax())]


def sample_block(draft_tokens: list[int], q: torch.Tensor, p: torch.Tensor,
                 generator: torch.Generator, **bug: bool) -> list[int]:
    out: list[int] = []
    for i, x in enumerate(draft_tokens):
        qi = q[i - 1] if bug.get("q_prev") and i > 0 else q[i]
        u = torch.rand((), generator=None if bug.get("global_rng") else generator)
        if bug.get("no_coin"):
            ok = p[i, x] >= qi[x]
        elif bug.get("ratio_inverted"):
            ok = u < qi[x] / p[i, x] if p[i, x] > 0 else False
        else:
            ok = u < p[i, x] / qi[x]
        if ok:
            out.append(x)
            continue
        res = p[i] if bug.get("resample_p") else (p[i] - q[i]).clamp_min(0)
        if float(res.sum()) <= 0:
            res = p[i]
        out.append(int(torch.multinomial(res, 1, generator=generator)))
        if bug.get("bonus_always"):
            out.append(int(torch.multinomial(p[-1], 1, generator=generator)))
        return out
    if not bug.get("drop_bonus"):
        k = len(draft_tokens)
        row = k - 1 if bug.get("bonus_row_k") and k else k
        out.append(int(torch.multinomial(p[row], 1, generator=generator)))
    return out


def verify_sampling(draft_tokens: list[int], draft_probs: torch.Tensor,
                    target_probs: torch.Tensor, generator: torch.Generator) -> list[int]:
    return sample_block(draft_tokens, draft_probs, target_probs, generator)


def batch_block(draft_tokens: torch.Tensor, draft_probs: torch.Tensor,
                target_probs: torch.Tensor, generator: torch.Generator,
                **bug: bool) -> list[list[int]]:
    b, k = draft_tokens.shape
    rows = torch.arange(b)
    p_x = target_probs[:, :k].gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    q_x = draft_probs.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    u = torch.rand(b, k, generator=generator)
    acc = u < p_x / q_x
    if bug.get("batch_min"):
        n = acc.long().cumprod(1).sum(1).min().expand(b)
    elif bug.get("no_cumprod"):
        n = acc.long().sum(1)
    else:
        n = acc.long().cumprod(1).sum(1)
    q_pad = torch.cat([draft_probs, torch.zeros(b, 1, target_probs.shape[-1])], 1)
    res = (target_probs[rows, n] - q_pad[rows, n]).clamp_min(0)
    res = torch.where(res.sum(-1, keepdim=True) > 0, res, target_probs[rows, n])
    last = torch.multinomial(res, 1, generator=generator).squeeze(1)
    return [[*draft_tokens[i, : int(n[i])].tolist(), int(last[i])] for i in range(b)]


def verify_batch(draft_tokens: torch.Tensor, draft_probs: torch.Tensor,
                 target_probs: torch.Tensor, generator: torch.Generator) -> list[list[int]]:
    return batch_block(draft_tokens, draft_probs, target_probs, generator)


def generate(target: Any, draft: Any, prompt_ids: list[int], max_new_tokens: int, k: int,
             temperature: float = 0.0, generator: torch.Generator | None = None,
             eos_token_id: int | None = None, **bug: bool) -> list[int]:
    """Caches hold every committed token but the last; the draft is fed whatever it lacks."""
    if not bug.get("no_reset"):  # both models arrive with empty caches: reset() is optional
        target.reset()
        draft.reset()
    seq = list(prompt_ids)
    out: list[int] = []
    if bug.get("budget_minus_one"):
        max_new_tokens -= 1
    if bug.get("at_least_one"):
        max_new_tokens = max(max_new_tokens, 1)
    if len(seq) > 1:
        target.forward(seq[:-1])
        if k:
            draft.forward(seq[:-1])
    while len(out) < max_new_tokens:
        n = len(seq)
        drafts: list[int] = []
        qs = []
        # clip_to_budget: draft only what the budget can still use (as the reference does)
        kk = min(k, max_new_tokens - len(out) - 1) if bug.get("clip_to_budget") else k
        if kk:
            feed = [seq[-1]] if bug.get("feed_last_only") else seq[draft.cache_len:]
            for _ in range(kk):
                logits = draft.forward(feed)[-1]
                if temperature > 0:
                    t = 1.0 if bug.get("q_untempered") else temperature
                    q_sample = torch.softmax(logits / temperature, -1).cpu()
                    x = int(torch.multinomial(q_sample, 1, generator=generator))
                    q_row = torch.softmax(logits / t, -1).cpu()
                    if bug.get("q_misaligned"):
                        qs.insert(0, q_row)
                    else:
                        qs.append(q_row)
                else:
                    x = int(logits.argmax())
                drafts.append(x)
                feed = [x]
        if bug.get("reset_recompute"):
            target.reset()
            rows = target.forward(seq + drafts)[len(seq) - 1:]
        elif bug.get("two_target_passes") and drafts:
            rows = torch.cat([target.forward([seq[-1]]), target.forward(drafts)])
        else:
            rows = target.forward([seq[-1], *drafts])
        if temperature > 0 and not (bug.get("k0_greedy") and k == 0):
            p = torch.softmax(rows / temperature, -1).cpu()
            q = torch.stack(qs) if qs else torch.zeros(0, p.shape[-1])
            emitted = sample_block(drafts, q, p, generator)
        else:
            emitted = verify_greedy(drafts, rows)
        m = len(emitted) - 1
        stop = (eos_token_id in emitted and not bug.get("ignore_eos")
                and not (bug.get("eos_falsy") and not eos_token_id))
        if bug.get("eos_drafts_only"):
            stop = eos_token_id is not None and eos_token_id in emitted[:-1]
        if bug.get("eos_in_seq"):  # looks for EOS in the whole sequence, prompt included
            stop = eos_token_id is not None and eos_token_id in seq + emitted
        if stop and eos_token_id in emitted:
            emitted = emitted[: emitted.index(eos_token_id) + 1]
        if not bug.get("overrun"):
            emitted = emitted[: max_new_tokens - len(out)]
        out += emitted
        seq += emitted
        if stop:
            break
        if len(out) >= max_new_tokens:
            break
        if not bug.get("no_crop"):
            target.crop(n + m)
            draft.crop(min(draft.cache_len, n if bug.get("draft_crop_start") else n + m))
    return out


def speculative_generate(target: Any, draft: Any, prompt_ids: list[int], max_new_tokens: int,
                         k: int, temperature: float = 0.0, generator: torch.Generator | None = None,
                         eos_token_id: int | None = None) -> list[int]:
    return generate(target, draft, prompt_ids, max_new_tokens, k, temperature, generator,
                    eos_token_id)
