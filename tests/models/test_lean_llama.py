"""The lean Llama forward computes what transformers computes, and its in-place cache never changes
a cache its holder already has (branching, dropping columns and rebuilt caches included)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # imports transformers and loads the target (~6 s): the full tier

from lab.exercises.batch_engine.runtime import HFStepModel, KVCache  # noqa: E402
from lab.models.lean_llama import KVView, LeanLlama, is_plain_llama  # noqa: E402


@pytest.fixture(scope="module")
def target() -> Any:
    from lab.models import load_model

    torch.set_num_threads(1)
    return load_model("pycode-target", device="cpu", dtype="float32")


def _hf_step(model: Any) -> HFStepModel:
    """The same step model with the lean path switched off: transformers' own forward."""
    step = HFStepModel(model)
    step.lean = None
    return step


def _batch(seed: int) -> tuple[Any, Any, Any]:
    """Two left-padded prompts (5 and 3 real tokens) as the engines send them."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 4000, (2, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    return ids, mask, positions


def test_the_shipped_target_is_a_plain_llama(target: Any) -> None:
    assert is_plain_llama(target)
    assert HFStepModel(target).lean is not None


def test_lean_steps_match_transformers_with_padding_and_decode_steps(target: Any) -> None:
    lean, hf = HFStepModel(target), _hf_step(target)
    ids, mask, positions = _batch(0)
    outs = []
    for model in (lean, hf):
        logits, kv = model.forward(ids, mask, positions, None)
        steps, m, pos = [logits], mask, positions[:, -1:]
        for _ in range(4):
            nxt = steps[-1].argmax(-1)[:, None]
            m, pos = torch.cat([m, torch.ones(2, 1, dtype=torch.long)], 1), pos + 1
            logits, kv = model.forward(nxt, m, pos, kv)
            steps.append(logits)
        outs.append(torch.stack(steps))
    assert torch.equal(outs[0].argmax(-1), outs[1].argmax(-1))
    torch.testing.assert_close(outs[0], outs[1], atol=1e-4, rtol=1e-4)


def test_every_new_columns_logits_match_a_full_forward(target: Any) -> None:
    seq = torch.arange(10, 30)[None]
    with torch.inference_mode():
        full = target(input_ids=seq).logits
    lean = LeanLlama(target)
    first, view = lean.step(seq[:, :12], torch.arange(12)[None], None, last_only=False)
    rest, _ = lean.step(seq[:, 12:], torch.arange(12, 20)[None], view, last_only=False)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, atol=1e-4, rtol=1e-4)


def _decode(model: HFStepModel, kv: KVCache, token: int, mask: Any, at: int) -> tuple[Any, Any]:
    nxt = torch.full((2, 1), token)
    return model.forward(nxt, torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], 1),
                         torch.full((2, 1), at), kv)


def test_stepping_again_from_an_older_cache_leaves_the_newer_one_intact(target: Any) -> None:
    model = HFStepModel(target)
    ids, mask, positions = _batch(1)
    _, kv1 = model.forward(ids, mask, positions, None)
    la, kva = _decode(model, kv1, 7, mask, 5)
    assert kva.view is not None and kv1.view is not None
    assert kva.view.buffer is kv1.view.buffer  # appended in place
    snapshot = [(k.clone(), v.clone()) for k, v in kva.layers]
    lb, kvb = _decode(model, kv1, 9, mask, 5)  # a branch from the older cache: a copy
    assert kvb.view is not None and kvb.view.buffer is not kva.view.buffer
    for (k, v), (k0, v0) in zip(kva.layers, snapshot, strict=True):
        assert torch.equal(k, k0) and torch.equal(v, v0)
    again, _ = _decode(model, kv1, 7, mask, 5)
    assert torch.equal(again, la)
    assert not torch.equal(lb, la)


def test_a_cache_cut_or_rebuilt_from_other_tensors_is_read_as_its_layers_say(target: Any) -> None:
    model, hf = HFStepModel(target), _hf_step(target)
    ids, mask, positions = _batch(2)
    _, kv = model.forward(ids, mask, positions, None)
    # drop the first column (padding for row 1, a real token for row 0: masked out below)
    cut = kv.drop_left(1)
    assert cut.view is not None and cut.length == kv.length - 1
    mask_cut = mask[:, 1:].clone()
    got, _ = _decode(model, cut, 11, mask_cut, 5)
    plain = KVCache(tuple((k.clone(), v.clone()) for k, v in cut.layers))
    want, _ = _decode(hf, plain, 11, mask_cut, 5)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    # a cache rebuilt with other tensors (a stale view kept by dataclasses.replace): the layers
    zeroed = dataclasses.replace(kv, layers=tuple((torch.zeros_like(k), torch.zeros_like(v))
                                                  for k, v in kv.layers))
    got_zero, _ = _decode(model, zeroed, 11, mask, 5)
    want_zero, _ = _decode(hf, KVCache(zeroed.layers), 11, mask, 5)
    torch.testing.assert_close(got_zero, want_zero, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got_zero, _decode(model, kv, 11, mask, 5)[0])


def test_a_view_is_cut_within_its_columns_only() -> None:
    from lab.models.lean_llama import KVBuffer

    view = KVView(KVBuffer([torch.zeros(1, 2, 8, 2)], 1, 5), 1, 5)
    assert view.cut(0, 4).end == 5 and view.cut(2, 4).start == 3
    with pytest.raises(ValueError, match=r"\[0, 5\) of a 4-column cache"):
        view.cut(0, 5)
    assert view.appendable(3) and not view.appendable(4)  # capacity 8, data ends at 5
    assert not view.cut(0, 3).appendable(1)  # not the newest: a step would copy


def test_a_bf16_model_normalises_in_fp32_as_transformers_does() -> None:
    import copy

    from lab.exercises.spec_verify.inputs import tiny_pair

    model = copy.deepcopy(tiny_pair(1, 64, 64, 2, 0.01)[0]).to(torch.bfloat16)
    seq = torch.arange(3, 20)[None]
    with torch.inference_mode():
        want = model(input_ids=seq).logits
    got, _ = LeanLlama(model).step(seq, torch.arange(17)[None], None, last_only=False)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), atol=2e-2, rtol=2e-2)


def test_a_remembered_prefill_is_a_private_copy_and_still_counts_as_a_pass() -> None:
    from lab.exercises.spec_verify.inputs import tiny_pair
    from lab.exercises.spec_verify.lm import CausalLM, Ledger

    model = tiny_pair(2, 64, 64, 2, 0.01)[0]
    prompt = [5, 9, 13, 2]
    with torch.inference_mode():
        want = model(input_ids=torch.tensor([[*prompt, 7, 8]])).logits[0]
    ledger = Ledger()
    first = CausalLM(model, name="target", ledger=ledger)
    mine = first.forward(prompt)
    first.crop(2)
    first.forward([1, 1, 1])  # writes where the prompt's columns 2-3 were
    seen = {mine.data_ptr()}
    for _ in range(2):  # a remembered prefill, twice: untouched by the above
        lm = CausalLM(model, name="target", ledger=ledger)
        hit = lm.forward(prompt)
        assert hit.data_ptr() not in seen  # each caller's logits are its own
        seen.add(hit.data_ptr())
        got = torch.cat([hit, lm.forward([7]), lm.forward([8])])
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        assert lm.passes == 3 and lm.tokens_processed == 6
    assert len(ledger.passes("target")) == 2 + 2 * 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rotary_rows_from_the_table_are_the_modules_own_numbers(target: Any,
                                                                 dtype: Any) -> None:
    """The rotary table (grown past its first 256 rows here) gives bit-identical rows to the
    rotary module called for just those positions, so the table can never move a logit."""
    lean = LeanLlama(target)
    positions = torch.tensor([[0, 5, 255, 256], [700, 1, 2, 300]])
    h = torch.zeros((2, 4, target.config.hidden_size), dtype=dtype)
    for rows in (positions[:, :2], positions):  # a small table first, then one that must grow
        cos, sin = lean._rope(h[:, : rows.shape[1]], rows)
        want_cos, want_sin = lean._per_head(*target.model.rotary_emb(h[:, : rows.shape[1]], rows))
        assert cos.dtype == dtype and torch.equal(cos, want_cos) and torch.equal(sin, want_sin)
    assert lean._rotary is not None and lean._rotary[1].shape[0] >= 701


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_packed_rotary_rotates_q_and_k_as_transformers_does_and_keeps_v(
        target: Any, dtype: Any) -> None:
    """One rotary over a packed q/k/v projection: q and k bit-identical to transformers'
    apply_rotary_pos_emb, v unchanged."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    lean = LeanLlama(target)
    heads, kv_heads, dim = lean.heads, lean.kv_heads, lean.head_dim
    positions = torch.tensor([[3, 4, 5], [40, 41, 900]])
    g = torch.Generator().manual_seed(3)
    qkv = torch.randn((2, 3, heads + 2 * kv_heads, dim), generator=g).to(dtype)
    cos, sin = lean._rope(qkv.new_zeros((2, 3, target.config.hidden_size)), positions)
    got = qkv * cos + qkv.roll(dim // 2, -1) * sin
    q, k = qkv[:, :, :heads].transpose(1, 2), qkv[:, :, heads:heads + kv_heads].transpose(1, 2)
    want_q, want_k = apply_rotary_pos_emb(
        q, k, *target.model.rotary_emb(qkv.new_zeros((2, 3, 1)), positions))
    assert torch.equal(got[:, :, :heads].transpose(1, 2), want_q)
    assert torch.equal(got[:, :, heads:heads + kv_heads].transpose(1, 2), want_k)
    assert torch.equal(got[:, :, heads + kv_heads:], qkv[:, :, heads + kv_heads:])


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 8, 17])
def test_every_projection_form_computes_f_linear(rows: int) -> None:
    """One row (as two), 2-3 rows (w @ x.T) and 4+ rows (oneDNN's packed weight): each form
    gives F.linear's numbers to float rounding, in the input's leading shape."""
    from lab.models.lean_llama import Projection

    g = torch.Generator().manual_seed(rows)
    for out, inner in ((512, 256), (256, 704), (4096, 256)):
        weight = torch.nn.Parameter(torch.randn((out, inner), generator=g) / 16)
        x = torch.randn((rows, 1, inner), generator=g)
        with torch.inference_mode():
            want = torch.nn.functional.linear(x, weight)
            got = Projection(weight)(x)
        assert got.shape == (rows, 1, out)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_a_step_attends_to_real_columns_up_to_itself_and_always_to_itself() -> None:
    from lab.exercises.batch_engine.runtime import _allowed

    mask = torch.tensor([[1, 1, 1], [0, 1, 0]], dtype=torch.bool)  # row 1's new token: padding
    got = _allowed(torch.zeros((2, 1), dtype=torch.long), mask, 2)
    assert got.tolist() == [[[[True, True, True]]], [[[False, True, True]]]]
    assert mask.tolist() == [[True, True, True], [False, True, False]]  # the caller's, untouched
    two = _allowed(torch.zeros((2, 2), dtype=torch.long), mask, 1)  # two new tokens, causal
    assert two.tolist() == [[[[True, True, False], [True, True, True]]],
                            [[[False, True, False], [False, True, True]]]]
