"""The shipped target read by torch alone (`lab.models.plain_llama`) is transformers' model bit
for bit: the same weights, rotary table and logits of its no-cache forward, and the same logits
through the step wrapper the engines run on; the shipped prompts tokenise the same without
transformers; and anything but a plain Llama is refused with the fault named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from lab.models import MODELS_DIR  # noqa: E402
from lab.models.plain_llama import load_plain_llama, plain_llama_fault  # noqa: E402

TARGET = MODELS_DIR / "pycode-target"


@pytest.fixture(scope="module")
def both() -> tuple[Any, Any]:
    from lab.models import load_model

    torch.set_num_threads(1)
    return load_plain_llama(TARGET), load_model("pycode-target", device="cpu", dtype="float32")


@pytest.mark.slow  # imports transformers and loads the target (~6 s)
def test_weights_rotary_and_forward_equal_transformers_bit_for_bit(both: tuple[Any, Any]) -> None:
    plain, hf = both
    theirs = hf.state_dict()
    mine = plain.state_dict()
    assert set(mine) == set(theirs)
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    h, positions = torch.zeros(1, 600, 256), torch.arange(600)[None]
    for a, b in zip(plain.model.rotary_emb(h, positions), hf.model.rotary_emb(h, positions),
                    strict=True):
        assert torch.equal(a, b)
    ids = torch.randint(2, 4096, (3, 70), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        assert torch.equal(plain(input_ids=ids).logits, hf(input_ids=ids, use_cache=False).logits)


@pytest.mark.slow
def test_the_step_wrapper_gives_the_same_logits_on_either_model(both: tuple[Any, Any]) -> None:
    """Left-padded prefill then decode steps on the cache: what an engine sees is unchanged."""
    from lab.exercises.batch_engine.runtime import HFStepModel

    ids = torch.randint(5, 4000, (2, 5), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    outs = []
    for model in both:
        step = HFStepModel(model)
        assert step.lean is not None
        logits, kv = step.forward(ids, mask, positions, None)
        got, m, pos = [logits], mask, positions[:, -1:]
        for _ in range(3):
            m, pos = torch.cat([m, torch.ones(2, 1, dtype=torch.long)], 1), pos + 1
            logits, kv = step.forward(got[-1].argmax(-1)[:, None], m, pos, kv)
            got.append(logits)
        outs.append(torch.stack(got))
    assert torch.equal(outs[0], outs[1])


@pytest.mark.slow
def test_the_shipped_prompts_tokenise_the_same_without_transformers() -> None:
    from lab.exercises.batch_engine import targets
    from lab.models import load_tokenizer

    tok = load_tokenizer("pycode-target")
    text = targets.PROMPTS.read_text(encoding="utf-8")
    ids, stop_ids, stop_seqs = targets.prompt_tokens()
    assert ids == tok(text, add_special_tokens=False)["input_ids"]
    tail = tok(" self.", add_special_tokens=False)["input_ids"]
    assert (stop_ids, stop_seqs) == (tail[-1:], [tail[-2:]])


def _config(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((TARGET / "config.json").read_text())
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("changes", "fault"), [
    ({"architectures": ["Qwen2ForCausalLM"]}, r"architectures \['Qwen2ForCausalLM'\], not"),
    ({"hidden_act": "gelu"}, r"hidden_act 'gelu'"),
    ({"attention_bias": True}, r"biased projections"),
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5}},
     r"rope_type 'llama3' \(only the default RoPE\)"),
])
def test_anything_but_a_plain_llama_is_refused_with_its_fault(
        tmp_path: Path, changes: dict[str, Any], fault: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(_config(**changes)))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match=r"is not a plain Llama checkpoint .*: " + fault):
        load_plain_llama(tmp_path)
    assert plain_llama_fault(_config(), TARGET) == ""
    assert plain_llama_fault(_config(), tmp_path.parent) == "no single model.safetensors"
