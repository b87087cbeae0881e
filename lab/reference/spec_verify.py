"""Reference speculative decoding: verifiers (greedy, sampling, batched) and the generation loop.

The grader compares learners with this module, and `bench/spec_decode.py` measures it against
plain decoding and transformers' assisted generation, so it is written to be exact and fast:
randomness only from the caller's generator, no Python loop over the vocabulary or the batch,
and exactly one target pass per block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from lab.exercises.spec_verify.lm import CausalLM


def verify_greedy(draft_tokens: list[int], target_logits: torch.Tensor) -> list[int]:
    """Accept drafted tokens while they equal the target's argmax; then one target token.

    Row i of `target_logits` scores the position after the prefix plus `draft_tokens[:i]`, so
    there are k + 1 rows and the last one gives the bonus token when all k match.
    """
    k = len(draft_tokens)
    if target_logits.dim() != 2 or target_logits.shape[0] != k + 1:
        raise ValueError(
            f"target_logits must be [k+1, V] = [{k + 1}, V], got {tuple(target_logits.shape)}"
        )
    best: list[int] = target_logits.argmax(dim=-1).tolist()
    out: list[int] = []
    for i, x in enumerate(draft_tokens):
        if int(x) != best[i]:
            out.append(best[i])
            return out
        out.append(int(x))
    out.append(best[k])
    return out


def _residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) row-wise, unnormalised; rows with no mass fall back to p (no NaN).

    A row can only be empty when p == q up to rounding, where a rejection has probability ~0.
    """
    res = (p - q).clamp_min(0)
    mass = res.sum(dim=-1, keepdim=True)
    return torch.where(mass > 0, res, p)


def _categorical(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw per row of unnormalised `weights` [..., V] with uniforms `u` [...].

    Exact, and much cheaper than torch.multinomial on small inputs; zero-weight ids are never
    returned (the CDF does not rise over them and the search is strict).
    """
    cdf = weights.double().cumsum(dim=-1)
    target = (u.double() * cdf[..., -1]).unsqueeze(-1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return idx.clamp_max(weights.shape[-1] - 1)


def verify_sampling(
    draft_tokens: list[int],
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator,
) -> list[int]:
    """Leviathan/Chen rejection sampling for one block; output ~ sampling from the target.

    Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection emit a token
    from norm(max(0, p_i - q_i)); if all k are accepted emit a bonus token from p_{k+1}.
    Uses k + 1 uniforms from `generator`: one coin per drafted token, one for the last token.
    """
    k = len(draft_tokens)
    if target_probs.shape[0] != k + 1 or draft_probs.shape[0] != k:
        raise ValueError(
            f"k = {k} drafted tokens need draft_probs [k, V] and target_probs [k+1, V]; got "
            f"{tuple(draft_probs.shape)} and {tuple(target_probs.shape)}"
        )
    u = torch.rand(k + 1, generator=generator, dtype=torch.float64, device=generator.device)
    coins: list[float] = u.tolist()
    n = k
    if k:
        # the k coins in Python floats (doubles, the same arithmetic as float64 tensors): a
        # block's k is small, and a tensor op per comparison costs more than the comparison
        pos = list(range(k))
        x = [int(t) for t in draft_tokens]
        p_x: list[float] = target_probs[pos, x].tolist()
        q_x: list[float] = draft_probs[pos, x].tolist()
        # u < p/q written without a division: q = 0 cannot be drafted, p = 0 is never accepted.
        n = next((i for i in range(k) if coins[i] * q_x[i] >= p_x[i]), k)
    dist = _residual(target_probs[n], draft_probs[n]) if n < k else target_probs[k]
    last = int(_categorical(dist.cpu(), u[k].cpu()))
    return [*(int(t) for t in draft_tokens[:n]), last]


def verify_batch(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator,
) -> list[list[int]]:
    """`verify_sampling` for B rows at once; each row's law is its solo law.

    One uniform per drafted token plus one for the last token of each row, all from `generator`;
    no Python loop over the batch or the vocabulary except to build the returned lists.
    """
    b, k = draft_tokens.shape
    v = target_probs.shape[-1]
    if target_probs.shape != (b, k + 1, v) or draft_probs.shape != (b, k, v):
        raise ValueError(
            f"shapes: draft_tokens [B, k] = {tuple(draft_tokens.shape)}, draft_probs must be "
            f"[{b}, {k}, V], target_probs [{b}, {k + 1}, V]; got {tuple(draft_probs.shape)} and "
            f"{tuple(target_probs.shape)}"
        )
    dev = target_probs.device
    x = draft_tokens.to(dev, torch.long)
    rows = torch.arange(b, device=dev)
    u = torch.rand(b, k + 1, generator=generator, dtype=torch.float64, device=generator.device)
    u = u.to(dev)
    if k:
        p_x = target_probs[:, :k].gather(-1, x.unsqueeze(-1)).squeeze(-1).double()
        q_x = draft_probs.gather(-1, x.unsqueeze(-1)).squeeze(-1).double()
        accepted = u[:, :k] * q_x < p_x
        n = accepted.long().cumprod(dim=1).sum(dim=1)
        # q at each row's stopping position, 0 where all k were accepted (p_{k+1} - 0 = p_{k+1});
        # gathered per row, never padded: copying [B, k, V] would cost more than the verify
        q_n = draft_probs[rows, n.clamp_max(k - 1)]
        q_n = torch.where((n < k).unsqueeze(-1), q_n, q_n.new_zeros(()))
        dist = _residual(target_probs[rows, n], q_n)
    else:
        n = torch.zeros(b, dtype=torch.long, device=dev)
        dist = target_probs[:, 0]
    last = _categorical(dist, u[:, k])
    drafted: list[list[int]] = x.tolist()
    counts: list[int] = n.tolist()
    lasts: list[int] = last.tolist()
    return [[*row[:m], z] for row, m, z in zip(drafted, counts, lasts, strict=True)]


def speculative_generate(
    target: CausalLM,
    draft: CausalLM,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    k: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    eos_token_id: int | None = None,
) -> list[int]:
    """Generate up to `max_new_tokens` tokens after `prompt_ids`: draft k, verify in one pass.

    temperature 0 is greedy (output == the target's plain greedy decoding); otherwise tokens follow
    the target's softmax(logits / temperature) law. Stops right after `eos_token_id`.
    Cache invariant at the start of each block: the target holds every committed token but the
    last; the draft holds a prefix of that and is fed what it has not seen before drafting.
    """
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ValueError("prompt_ids must hold at least one token")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    target.reset()
    draft.reset()
    out: list[int] = []
    if max_new_tokens <= 0:
        return out
    sampling = temperature > 0
    if sampling and generator is None:
        generator = torch.Generator()
        generator.seed()
    if len(prompt) > 1:
        target.forward(prompt[:-1])
        if k:
            draft.forward(prompt[:-1])
    seq = list(prompt)
    while True:
        n = len(seq)
        budget = max_new_tokens - len(out)
        law = temperature if sampling else None
        drafts, qs = _draft_block(draft, seq[draft.cache_len :], min(k, budget - 1), law,
                                  generator, eos_token_id)
        emitted = _verify_block(target, seq[-1], drafts, qs, law, generator)
        accepted = len(emitted) - 1
        done = False
        if eos_token_id is not None and eos_token_id in emitted:
            emitted = emitted[: emitted.index(eos_token_id) + 1]
            done = True
        emitted = emitted[:budget]
        out.extend(emitted)
        seq.extend(emitted)
        if done or len(out) >= max_new_tokens:
            return out
        # Keep the accepted drafts; the correction/bonus (seq[-1]) is fed with the next block.
        target.crop(n + accepted)
        draft.crop(min(draft.cache_len, n + accepted))


def _draft_block(draft: CausalLM, feed: list[int], kk: int, temperature: float | None,
                 generator: torch.Generator | None,
                 eos_token_id: int | None) -> tuple[list[int], list[torch.Tensor]]:
    """Up to `kk` draft tokens after feeding the draft what it has not seen (`feed`), greedy
    or (a temperature) sampled from its law; stops after EOS. Returns the drafts and, when
    sampling, each draft's distribution."""
    drafts: list[int] = []
    qs: list[torch.Tensor] = []
    for _ in range(kk):
        logits = draft.forward(feed)[-1]
        if temperature is not None:
            assert generator is not None
            q = torch.softmax(logits.float().cpu() / temperature, dim=-1)
            x = int(_categorical(q, torch.rand((), generator=generator, dtype=torch.float64)))
            qs.append(q)
        else:
            x = int(logits.argmax())
        drafts.append(x)
        feed = [x]
        if x == eos_token_id:
            break
    return drafts, qs


def _verify_block(target: CausalLM, last: int, drafts: list[int], qs: list[torch.Tensor],
                  temperature: float | None, generator: torch.Generator | None) -> list[int]:
    """One target pass over the last committed token and the drafts; the tokens it emits
    (the accepted drafts and a correction or bonus token)."""
    t_logits = target.forward([last, *drafts])
    if temperature is None:
        return verify_greedy(drafts, t_logits)
    assert generator is not None
    p = torch.softmax(t_logits.float().cpu() / temperature, dim=-1)
    q_all = torch.stack(qs) if qs else p.new_zeros(0, p.shape[-1])
    return verify_sampling(drafts, q_all, p, generator)


def _check_parents(parents: Sequence[int]) -> list[int]:
    par = [int(x) for x in parents]
    if not par or par[0] != -1 or any(not 0 <= p < i for i, p in enumerate(par) if i):
        raise ValueError(
            f"parents must start with -1 (the root), then 0 <= parents[i] < i; got {par}"
        )
    return par


def tree_attention_mask(parents: list[int]) -> torch.Tensor:
    """[N, N] bool: node i attends to node j iff j is i or one of i's ancestors.

    Node 0 is the root (the last committed token); parents[i] < i, so a single forward sweep
    inherits each parent's finished row.
    """
    par = _check_parents(parents)
    n = len(par)
    mask = torch.eye(n, dtype=torch.bool)
    for i in range(1, n):
        mask[i] |= mask[par[i]]
    return mask


def verify_tree(
    tokens: list[int], parents: list[int], target_logits: torch.Tensor
) -> tuple[list[int], int]:
    """Greedy walk of a scored token tree: (accepted node indices, the target's next token).

    Row i of `target_logits` scores the position after node i's path. From the root, move to the
    first child carrying the target's argmax; when no child matches, that argmax is the
    correction (or, at a leaf, the bonus).
    """
    par = _check_parents(parents)
    if target_logits.shape[0] != len(par) or len(tokens) != len(par):
        raise ValueError("tokens, parents and target_logits must all have N entries/rows")
    best: list[int] = target_logits.argmax(dim=-1).tolist()
    children: list[list[int]] = [[] for _ in par]
    for i in range(1, len(par)):
        children[par[i]].append(i)
    path: list[int] = []
    cur = 0
    while True:
        nxt = next((c for c in children[cur] if int(tokens[c]) == best[cur]), None)
        if nxt is None:
            return path, best[cur]
        path.append(nxt)
        cur = nxt
