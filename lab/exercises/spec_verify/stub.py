"""spec-verify: speculative decoding's verifier and loop (see `dojo lab show spec-verify`).

Edit the bodies below, then run `dojo lab grade spec-verify --level 1` (then 2, 3, 4).
Everything is torch; no other imports are needed. Randomness: use only `generator`.
"""

from __future__ import annotations

import torch

from lab.exercises.spec_verify.lm import CausalLM


def verify_greedy(draft_tokens: list[int], target_logits: torch.Tensor) -> list[int]:
    """Level 1. Greedy verification of one block.

    draft_tokens: the k drafted ids x_1..x_k (k may be 0).
    target_logits: [k+1, V]; row i scores the position after the prefix plus draft_tokens[:i].
    Return the accepted prefix of the draft followed by exactly one target token: the target's
    argmax at the first mismatch (the correction), or argmax of row k when all k match (the bonus).
    Ties: the argmax is the lowest tied id (torch.argmax's rule).
    """
    raise NotImplementedError("verify_greedy")


def verify_sampling(
    draft_tokens: list[int],
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator,
) -> list[int]:
    """Level 2. Rejection sampling (Leviathan et al. 2023 / Chen et al. 2023) for one block.

    draft_probs: [k, V], q_i: the distributions the drafts were actually sampled from.
    target_probs: [k+1, V], p_i from one target pass.
    Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection emit one token
    from norm(max(0, p_i - q_i)) and stop; if all k are accepted, emit a bonus token from p_{k+1}.
    Draw every random number from `generator` (same seed -> same output).
    """
    raise NotImplementedError("verify_sampling")


def verify_batch(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator,
) -> list[list[int]]:
    """Level 3. verify_sampling for B independent rows at once.

    draft_tokens: [B, k] (long); draft_probs: [B, k, V]; target_probs: [B, k+1, V].
    Return one list per row (rows accept different lengths). Vectorise: no Python loop over the
    vocabulary; each row's output must follow its solo law.
    """
    raise NotImplementedError("verify_batch")


def speculative_generate(
    target: CausalLM,
    draft: CausalLM,
    prompt_ids: list[int],
    max_new_tokens: int,
    k: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    eos_token_id: int | None = None,
) -> list[int]:
    """Level 4. The speculative decoding loop on real models, with KV caches.

    target / draft offer: forward(tokens) -> fp32 logits [n, V] for the n new tokens (row j
    scores the token after tokens[j]), extending the cache; crop(n) keeps the first n cached
    tokens; cache_len; context; reset(); passes. Both arrive with empty caches, on every call.
    Each block: the draft proposes k tokens, the target scores them all in ONE forward pass, your
    verifier decides, and both caches are cut back to what was accepted; the draft must see the
    correction/bonus token before drafting again.
    temperature == 0: greedy; the output must equal the target's own greedy decoding.
    temperature > 0: p = softmax(target_logits / T), q = softmax(draft_logits / T), and the drafts
    are sampled from that same q with `generator`.
    Return exactly max_new_tokens new ids (none for 0), or fewer ending with the first
    eos_token_id (which may be 0).
    """
    raise NotImplementedError("speculative_generate")


def tree_attention_mask(parents: list[int]) -> torch.Tensor:
    """Level 5. The attention mask of a token tree, [N, N] bool.

    parents[0] == -1 (node 0 is the root: the last committed token); parents[i] < i otherwise.
    mask[i, j] is True iff node j is node i itself or one of its ancestors.
    """
    raise NotImplementedError("tree_attention_mask")


def verify_tree(
    tokens: list[int], parents: list[int], target_logits: torch.Tensor
) -> tuple[list[int], int]:
    """Level 5. Greedy verification of a token tree scored in one target pass.

    tokens[i] is node i's token (tokens[0] = the root); row i of target_logits [N, V] scores the
    position after node i's path. Walk from the root: move to the first (lowest-index) child whose
    token is the target's argmax there; stop when none matches. Return (the accepted node
    indices in order, root excluded; the target's argmax at the last accepted node).
    """
    raise NotImplementedError("verify_tree")
