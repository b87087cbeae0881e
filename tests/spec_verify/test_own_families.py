"""spec-verify on a learner's own checkpoints of other families: tiny random models of
Llama, Qwen2, GPT-2, Mistral with a small sliding window, and Phi-3, built offline here with the
shipped pair's tokenizer and saved with save_pretrained.

Before the fix, a sliding-window model failed level 4 for the reference itself: transformers'
sliding cache layers refuse `crop` once the window is full, and the speculative loop crops
rejected drafts. `lab.models.windows.full_cache` gives such models full layers (the window
stays in the mask).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

SHIPPED = Path(__file__).resolve().parents[2] / "lab" / "models" / "pycode-target"
WINDOW = 8  # Mistral's sliding window: prompts and outputs run well past it
COMMON = {"vocab_size": 4096, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 1}
ATTN = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2}
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": ATTN,
    "qwen2": ATTN,
    "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 1024},
    "mistral": {**ATTN, "sliding_window": WINDOW},
    "phi3": ATTN,
}


def build(family: str, out: Path, seed: int = 0, vocab: int = 4096) -> Path:
    """A tiny random `family` checkpoint in `out` with the shipped tokenizer (no download);
    `vocab` > 4096 pads its logits past the tokenizer's 4,096 tokens."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(family, **{**COMMON, "vocab_size": vocab}, **FAMILIES[family])
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SHIPPED / name, out / name)
    return out


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {family: build(family, root / family, seed=i)
            for i, family in enumerate(FAMILIES)}


def _lm(path: Path, name: str) -> Any:
    from lab.exercises.spec_verify.lm import CausalLM
    from lab.models.loading import load_model

    return CausalLM(load_model(path, device="cpu", dtype="float32"), name=name)


@pytest.mark.slow
def test_sliding_cache_of_transformers_refuses_the_crop_that_full_cache_allows(
        checkpoints: dict[str, Path]) -> None:
    """The defect itself: past the window, transformers' default cache for Mistral cannot be
    cropped; `full_cache` can, and stepping on from the cropped cache gives the model's logits."""
    import torch
    from transformers import DynamicCache

    from lab.models.loading import load_model
    from lab.models.windows import full_cache

    model = load_model(checkpoints["mistral"], device="cpu", dtype="float32")
    ids = torch.arange(2, 2 + 3 * WINDOW)[None]
    default = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(input_ids=ids, cache=default, use_cache=True)
    with pytest.raises(RuntimeError, match="does not track past states"):
        default.crop(-3)
    cache = full_cache(model.config)
    with torch.inference_mode():
        model(input_ids=ids, cache=cache, use_cache=True)
        cache.crop(-3)  # drop the last 3: back to 3 * WINDOW - 3 tokens
        stepped = model(input_ids=ids[:, -3:-2], cache=cache, use_cache=True).logits[0, -1]
        whole = model(input_ids=ids[:, :-2]).logits[0, -1]
    assert torch.allclose(stepped, whole, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize(("target", "draft"), [("mistral", "llama"), ("llama", "mistral"),
                                               ("mistral", "mistral"), ("qwen2", "gpt2"),
                                               ("gpt2", "qwen2"), ("phi3", "mistral")])
def test_reference_loop_equals_the_models_own_greedy_decode(
        checkpoints: dict[str, Path], target: str, draft: str) -> None:
    """The reference's speculative loop on two families equals transformers' generate (its own
    caches) token for token, prompts and outputs past Mistral's window: with rejections (two
    random models rarely agree) and with every draft accepted (a model drafting for itself)."""
    import importlib

    import torch

    from lab.exercises.spec_verify import grading

    reference = importlib.import_module(grading.REFERENCE)
    t_lm, d_lm = _lm(checkpoints[target], "target"), _lm(checkpoints[draft], "draft")
    prompt = [0, *range(7, 7 + 2 * WINDOW)]
    new = 3 * WINDOW
    tokens = reference.speculative_generate(t_lm, d_lm, prompt, new, k=4)
    with torch.no_grad():
        out = t_lm.model.generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False,
                                  min_new_tokens=new)
    assert [int(t) for t in tokens] == out[0, len(prompt):].tolist()
    # every block with a rejection cropped the target's cache, past the window from the start
    assert len(prompt) > WINDOW and t_lm.cache_len >= len(prompt) + new - 1


@pytest.mark.slow
def test_tree_pass_keeps_the_sliding_window(checkpoints: dict[str, Path]) -> None:
    """Level 5's tree pass hands the model an explicit mask, which replaces the model's own:
    without the window folded in, a Mistral target's tree scores differ from its plain decode.
    A chain-shaped tree past the window must score like the same tokens fed in order."""
    import torch

    target = _lm(checkpoints["mistral"], "target")
    prompt = [0, *range(7, 7 + 2 * WINDOW)]
    chain = [11, 12, 13]
    target.forward(prompt)
    tree = target.forward_tree(chain, torch.ones(3, 3, dtype=torch.bool).tril())
    plain = _lm(checkpoints["mistral"], "plain")
    rows = plain.forward([*prompt, *chain])[len(prompt):]
    assert torch.allclose(tree, rows, atol=1e-4)


def test_sliding_window_reads_the_config() -> None:
    """Which configs get a window in the tree mask: Mistral's, not Qwen2's with the window off,
    and a model mixing windowed and full layers is refused with the reason."""
    from types import SimpleNamespace

    from lab.exercises.spec_verify.lm import sliding_window

    assert sliding_window(SimpleNamespace(sliding_window=8)) == 8
    assert sliding_window(SimpleNamespace(sliding_window=None)) is None
    assert sliding_window(SimpleNamespace(sliding_window=4096,
                                          layer_types=["full_attention"] * 2)) is None
    with pytest.raises(ValueError, match="mixes layer types"):
        sliding_window(SimpleNamespace(sliding_window=8,
                                       layer_types=["sliding_attention", "full_attention"]))


@pytest.mark.slow
def test_a_padded_vocabulary_is_cut_to_the_shared_one(checkpoints: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """A target padded to 4,160 logits over the 4,096-token tokenizer, its draft unpadded: the
    wrappers give both 4,096 logits (no id the draft or the tokenizer cannot take), and the
    reference passes levels 4 and 5 on them (before: "token id 41xx is outside the
    vocabulary"). Both are Mistrals with their window, so the same grading is the
    sliding-window checkpoints' level 4 through the real sandbox, as `dojo lab grade
    spec-verify --target/--draft` runs it, as target and as draft (before the fix the reference
    itself failed it: a sliding cache refuses the crop of rejected drafts)."""
    from lab.exercises.spec_verify import inputs
    from lab.exercises.spec_verify.lm import CausalLM
    from lab.grader.testing import assert_passes, reference_as_solution

    target = build("mistral", tmp_path / "padded", seed=5, vocab=4160)
    draft = checkpoints["mistral"]
    t_model, d_model, _ = inputs.shipped("cpu", str(target), str(draft))
    assert CausalLM(t_model).forward([5, 6, 7]).shape == (3, 4096)
    assert CausalLM(d_model).vocab_size == 4096
    run = assert_passes("spec-verify", reference_as_solution("spec-verify", tmp_path / "ref"),
                        [4, 5], seed=3, timing_repeats=1,  # one run: one child, one load
                        models={"target": str(target), "draft": str(draft)})
    assert [lvl.level for lvl in run.result.levels] == [4, 5]
