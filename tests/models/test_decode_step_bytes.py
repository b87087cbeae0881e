"""bench/decode_step.py counts the bytes a decode step reads as a hand count does, refuses a
config it cannot count, and says so when CUDA is asked for where there is none."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bench.decode_step import main, step_cost


def _tiny(**over: Any) -> SimpleNamespace:
    fields = {"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
              "vocab_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1,
              "head_dim": 4}
    return SimpleNamespace(**{**fields, **over})


def test_a_tiny_llamas_bytes_are_the_hand_count() -> None:
    # per layer: q 8x8, k 8x4, v 8x4, o 8x8, gate 8x16, up 8x16, down 16x8, two norms of 8
    layer = 64 + 32 + 32 + 64 + 128 + 128 + 128 + 16
    weights = 2 * layer + 8 + 32 * 8 + 3 * 8  # layers, final norm, head, 3 embedding rows
    kv = 3 * 2 * 2 * 1 * 4 * (5 + 1)  # rows, layers, K and V, kv heads, head dim, columns
    got = step_cost(_tiny(), batch=3, context=5, dtype_bytes=4)
    assert (got.weights, got.kv, got.total) == (4 * weights, 4 * kv, 4 * (weights + kv))
    assert weights == 1472 and kv == 288
    # 2 FLOPs per matrix weight per row (layers' matrices and the head, no norms), and per row,
    # layer and head: q.k and p.v over 6 columns of head dim 4
    matrices = 2 * (64 + 32 + 32 + 64 + 128 + 128 + 128) + 32 * 8
    assert got.flops == 2 * 3 * matrices + 2 * 3 * 2 * 2 * 2 * 4 * 6


def test_head_dim_defaults_to_hidden_over_heads() -> None:
    assert step_cost(_tiny(head_dim=None), 1, 0, 2) == step_cost(_tiny(), 1, 0, 2)
    with pytest.raises(ValueError, match="hidden_size 9 is not a multiple of "
                                         "num_attention_heads 2"):
        step_cost(_tiny(head_dim=None, hidden_size=9), 1, 0, 4)


@pytest.mark.parametrize(("config", "batch", "context", "dtype_bytes", "message"), [
    (_tiny(), 0, 5, 4, "batch must be >= 1, got 0"),
    (_tiny(), 1, -1, 4, "context must be >= 0 cached columns, got -1"),
    (_tiny(), 1, 5, 3, "dtype_bytes must be 1, 2, 4 or 8, got 3"),
    (_tiny(vocab_size=None), 1, 5, 4, "config.vocab_size must be a positive int"),
    (_tiny(num_key_value_heads=0), 1, 5, 4, "config.num_key_value_heads must be a positive int"),
])
def test_what_cannot_be_counted_is_refused(config: Any, batch: int, context: int,
                                           dtype_bytes: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        step_cost(config, batch, context, dtype_bytes)


def test_bad_batch_sizes_are_refused_before_anything_loads(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["--batches", "1,x"])
    assert "--batches must be comma-separated ints, got '1,x'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_shipped_targets_count_is_its_parameters_plus_one_embedding_row(pair: Any) -> None:
    model = pair.target
    params = sum(p.numel() * p.element_size() for p in model.parameters())  # tied head: once
    got = step_cost(model.config, batch=1, context=0, dtype_bytes=4)
    assert got.weights == params + model.config.hidden_size * 4
    assert got.kv == 8 * 2 * 4 * 32 * 4  # one column: layers, K and V, kv heads, head dim, fp32


@pytest.mark.slow
def test_cuda_without_a_gpu_says_so(capsys: Any) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the CUDA path runs for real")
    assert main(["--device", "cuda"]) == 2
    assert "CUDA is unavailable here" in capsys.readouterr().err
