"""The shipped pair loads offline, in the requested device/dtype, and bad input fails clearly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.models import (
    IncompatiblePairError,
    ModelLoadError,
    available_pairs,
    load_model,
    load_pair,
    resolve_dtype,
)

ROOT = Path(__file__).resolve().parents[2]


def test_importing_lab_models_does_not_load_torch() -> None:
    code = "import sys, lab.models; sys.exit(bool({'torch', 'transformers'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_shipped_pair_is_listed_with_figures() -> None:
    pairs = {p.name: p for p in available_pairs()}
    assert "pycode" in pairs
    info = pairs["pycode"]
    for folder in (info.target, info.draft):
        names = {p.name for p in folder.iterdir()}
        assert {
            "config.json",
            "model.safetensors",
            "generation_config.json",
            "tokenizer.json",
            "README.md",
            "training.json",
        } <= names
    for key in ("ppl_target", "ppl_draft", "alpha_greedy", "c", "margin_target"):
        assert key in info.figures


def test_shipped_weights_are_half_precision_and_small() -> None:
    info = {p.name: p for p in available_pairs()}["pycode"]
    total = 0
    for folder in (info.target, info.draft):
        header_len = int.from_bytes((folder / "model.safetensors").read_bytes()[:8], "little")
        raw = (folder / "model.safetensors").read_bytes()[8 : 8 + header_len]
        dtypes = {v["dtype"] for k, v in json.loads(raw).items() if k != "__metadata__"}
        assert dtypes <= {"F16", "BF16"}
        total += sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    assert total < 30 * 1024 * 1024


@pytest.mark.slow
def test_pair_loads_offline_in_a_fresh_process() -> None:
    """No network: proxies point at a closed port, so any hub access would raise."""
    code = (
        "import torch; from lab.models import load_pair; p = load_pair(); "
        "assert type(p.target).__name__ == type(p.draft).__name__ == 'LlamaForCausalLM'; "
        "assert p.device == 'cpu' and p.dtype == torch.float32; "
        "assert not p.target.training and not p.draft.training; "
        "assert next(p.target.parameters()).dtype == torch.float32; print('ok')"
    )
    env = dict(
        os.environ,
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        CUDA_VISIBLE_DEVICES="",
        OMP_NUM_THREADS="1",
    )
    env.pop("HF_HUB_OFFLINE", None)
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("ok")


@pytest.mark.slow  # loads the pair (~4 s): not in the fast tier
def test_pair_shares_one_vocabulary(pair: Any) -> None:
    from lab.models import load_tokenizer

    draft_tok = load_tokenizer(pair.draft_path)
    assert pair.tokenizer.get_vocab() == draft_tok.get_vocab()
    assert pair.target.config.vocab_size == pair.draft.config.vocab_size == len(pair.tokenizer)
    assert pair.vocab_size == len(pair.tokenizer)
    for attr in ("eos_token_id", "pad_token_id", "bos_token_id"):
        assert getattr(pair.target.config, attr) == getattr(pair.draft.config, attr)
    assert pair.tokenizer.pad_token_id != pair.tokenizer.eos_token_id


@pytest.mark.slow  # imports transformers and loads a model (~4 s)
def test_load_model_honours_dtype_and_name() -> None:
    import torch

    model = load_model("pycode-draft", device="cpu", dtype="bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    assert not model.training
    assert resolve_dtype(None, "cpu") == torch.float32
    assert resolve_dtype(None, "cuda") == torch.bfloat16
    assert resolve_dtype("float32", "cuda") == torch.float32


def test_bad_paths_and_options_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no model at"):
        load_model(tmp_path / "missing")
    with pytest.raises(ModelLoadError, match=r"no config\.json"):
        load_model(tmp_path)
    (tmp_path / "f.bin").write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="is a file"):
        load_model(tmp_path / "f.bin")
    with pytest.raises(ModelLoadError, match=r"no shipped pair named 'nope'.*pycode"):
        load_pair("nope")
    with pytest.raises(ValueError, match="unknown dtype"):
        load_model("pycode-draft", device="cpu", dtype="float8")
    with pytest.raises(ValueError, match="unknown device"):
        load_model("pycode-draft", device="tpu")


@pytest.mark.slow  # loads two tokenizers through transformers: ~4 s
def test_draft_with_a_different_tokenizer_is_rejected(tmp_path: Path) -> None:
    info = {p.name: p for p in available_pairs()}["pycode"]
    other = tmp_path / "other-draft"
    shutil.copytree(info.draft, other)
    spec = json.loads((other / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    a, b = "def", "Ġself"
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (other / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(IncompatiblePairError, match=r"tokenizers .* differ"):
        load_pair(target=info.target, draft=other, device="cpu")


@pytest.mark.slow  # loads the pair (~4 s): not in the fast tier
def test_custom_checkpoint_paths_are_accepted(pair: Any) -> None:
    custom = load_pair(target=str(pair.target_path), draft=pair.draft_path, device="cpu")
    assert custom.name == "custom"
    assert custom.target_path == pair.target_path
