"""Every lab wrapper against transformers' own no-cache forward, per model family.

A learner may grade with `--target/--draft` checkpoints of any family, and the labs hand their
model to the learner (and to the reference) through wrappers with caches of their own: the
batch engine's `HFStepModel`, spec-verify's `CausalLM`, sampling's `Model`. Each family here is
a tiny random model built offline from its config (2 layers, hidden 32); each wrapper's logits
must equal the model's forward over the row's whole sequence alone (no cache, no padding) within
1e-5 in fp32. Before the fix, the batch-engine wrapper's left-padded rows of sliding-window
models differed by 0.16 (Mistral, window 8), 0.37 (Gemma-2) and 0.49 (Gemma-3); every other
family by ≤ 2e-7.
"""

from __future__ import annotations

from typing import Any

import pytest

WINDOW = 8  # sequences here run past it
TOL = 1e-5
COMMON = {"vocab_size": 256, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 1}
ATTN = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2}
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": ATTN,
    "qwen2": ATTN,
    "qwen3": {**ATTN, "head_dim": 8},
    "mistral": {**ATTN, "sliding_window": WINDOW},
    "gemma2": {**ATTN, "head_dim": 8, "sliding_window": WINDOW},
    "gemma3_text": {**ATTN, "head_dim": 8, "sliding_window": WINDOW},
    "gpt_neox": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                 "num_attention_heads": 4},
    "olmo2": ATTN,
    "granite": ATTN,
    "cohere": ATTN,
    "mixtral": {**ATTN, "num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": {**ATTN, "num_experts": 4, "num_experts_per_tok": 2,
                  "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32},
}


def tiny(family: str, seed: int = 0) -> Any:
    """A tiny random `family` model in fp32, eval mode (nothing downloaded)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(family, **COMMON, **FAMILIES[family])
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg).eval()


def truth(model: Any, seq: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        return model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].float()


def batch_engine_error(model: Any) -> float:
    """Largest |Δ| over an engine's life: two left-padded rows (12 and 3 tokens) prefilled,
    decoded past the window, then a 5-token newcomer joins (the running rows' new tokens
    left-padded beside its prefill: a gap of padding columns inside their rows)."""
    import torch

    from lab.exercises.batch_engine.runtime import HFStepModel

    wrapper = HFStepModel(model)
    seqs = [list(range(5, 17)), [40, 41, 42]]
    state: dict[str, Any] = {"kv": None, "mask": None}

    def step(news: list[list[int]]) -> Any:
        t = max(len(n) for n in news)
        ids = torch.tensor([[1] * (t - len(n)) + n for n in news])
        new_mask = torch.tensor([[0] * (t - len(n)) + [1] * len(n) for n in news])
        mask = new_mask if state["mask"] is None else torch.cat([state["mask"], new_mask], 1)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -t:]
        logits, state["kv"] = wrapper.forward(ids, mask, positions, state["kv"])
        state["mask"] = mask
        return logits

    logits, worst = step(seqs), 0.0
    for n in range(12):
        worst = max(worst, *(float((logits[r] - truth(model, s)).abs().max())
                             for r, s in enumerate(seqs)))
        for s, row in zip(seqs, logits, strict=False):
            s.append(int(row.argmax()))
        news = [[s[-1]] for s in seqs]
        if n == 5:
            state["kv"] = state["kv"].add_rows(1)
            state["mask"] = torch.cat([state["mask"],
                                       torch.zeros(1, state["mask"].shape[1], dtype=torch.long)])
            seqs.append([60, 61, 62, 63, 64])
            news.append(list(seqs[-1]))
        logits = step(news)
    return worst


def spec_verify_error(model: Any) -> float:
    """A prompt past the window, a block of drafts, a crop of two rejected ones, one more step:
    every row of logits against the forward of its prefix."""
    import torch

    from lab.exercises.spec_verify.lm import CausalLM

    lm = CausalLM(model)
    prompt = list(range(5, 5 + 2 * WINDOW))
    rows = lm.forward(prompt)
    worst = max(float((rows[j] - truth(model, prompt[:j + 1])).abs().max())
                for j in range(len(prompt)))
    block = [30, 31, 32, 33]
    rows = lm.forward(block)
    seq = prompt + block
    worst = max(worst, *(float((rows[j] - truth(model, seq[:len(prompt) + j + 1])).abs().max())
                         for j in range(len(block))))
    lm.crop(len(seq) - 2)
    row = lm.forward([50])[-1]
    with torch.inference_mode():
        return max(worst, float((row - truth(model, [*seq[:-2], 50])).abs().max()))


def sampling_error(model: Any) -> float:
    from lab.exercises.sampling.lm import Model

    class Tokenizer:  # what Model reads of a tokenizer: its EOS id and its size
        eos_token_id = 0

        def __len__(self) -> int:
            return int(model.config.vocab_size)

    wrapped = Model(model, Tokenizer(), "cpu")
    seqs = [list(range(5, 5 + 2 * WINDOW)), [7], [7, 8, 9]]
    logits = wrapped.next_logits(seqs)
    return max(float((logits[r] - truth(model, s)).abs().max()) for r, s in enumerate(seqs))


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_wrapper_equals_the_models_own_forward(family: str) -> None:
    model = tiny(family)
    errors = {"batch-engine": batch_engine_error(model), "spec-verify": spec_verify_error(model),
              "sampling": sampling_error(model)}
    assert max(errors.values()) <= TOL, errors


@pytest.mark.slow
def test_the_consistency_check_catches_the_window_dropped_from_a_padded_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check has teeth: the old batch-engine wrapper (transformers' sliding cache layers,
    the window left to the model's column-based mask) is off by far more than the tolerance."""
    from lab.exercises.batch_engine import runtime

    monkeypatch.setattr(runtime, "has_window", lambda config: False)
    monkeypatch.setattr(runtime, "full_cache", _transformers_cache)
    assert batch_engine_error(tiny("mistral")) > 1e-2


def _transformers_cache(config: Any, layers: Any = None) -> Any:
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=list(layers), config=config) if layers else DynamicCache(
        config=config)
