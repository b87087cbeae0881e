"""decode-attention has teeth: the reference passes every level through the real sandbox (the
interpreter inside it), the stub fails level 1 as not implemented, and each broken kernel fails
the case of the level whose contract names its bug, with the bug named in the message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.decode_attention.conftest import BROKEN, grade_in_process, materialize

STUB = Path(__file__).resolve().parents[2] / "lab" / "exercises" / "decode_attention" / "stub.py"

# (broken file, level, the case that catches it, what the message must say)
BROKEN_CASES = [
    ("softmax_pad_zero", 1, "width-1000", r"masked lanes loaded as 0\.0 .* load them as -inf"),
    ("softmax_no_max", 1, "large-logits", r"NaN or inf .* subtract the row max before exp"),
    ("softmax_stride_ncols", 1, "strided-rows", r"rows read n_cols apart instead of x\.stride"),
    ("softmax_fp32_output", 1, "fp16-width-3000", r"returned float32 for float16 input"),
    ("softmax_block_is_width", 1, "width-1000", r"arange's range must be a power of 2"),
    ("softmax_in_place", 1, "width-1", r"changed its input\(s\) x"),
    ("attn_no_scale", 2, "heads-equal-kv-heads", r"not multiplied by scale"),
    ("attn_sqrt_d", 2, "heads-equal-kv-heads", r"multiplied by sqrt\(head_dim\) instead"),
    ("attn_gqa_tiled", 2, "largest-gqa-ratio|fp16", r"GQA heads tiled: .* h // \(heads"),
    ("attn_len_plus_one", 2, "lengths-1-32-33-64", r"NaN .* a read past seq_len"),
    ("attn_v_unmasked", 2, "lengths-1-32-33-64", r"NaN .* mask the K and V loads"),
    ("attn_no_rescale_acc", 2, "large-scores", r"accumulator was not rescaled"),
    ("attn_no_rescale_sum", 2, "large-scores", r"running sum was not rescaled"),
    ("attn_first_tile_only", 2, "lengths-1-32-33-64", r"only the first tile \(32 tokens\)"),
    ("attn_scales_q_in_place", 2, "fp16", r"changed its input\(s\) q"),
    ("paged_ignores_table", 3, "block-size-32", r"block table was ignored"),
    ("paged_block_stride", 3, "block-size-32", r"block \* k_stride_t \(one token\)"),
    ("paged_last_block_unmasked", 3, "block-size-4", r"NaN .* rest of a partly filled last"),
    ("paged_floor_blocks", 3, "block-size-32", r"last, partly filled block was skipped"),
    ("split_normalised_acc", 4, "partials-empty-splits",
     r"split 1 of sequence 0 holds no token .* acc = 0; got .*nan"),
    ("split_from_zero", 4, "partials-empty-splits", r"split 1 of sequence 0 holds no token"),
    ("split_past_length", 4, "partials-empty-splits", r"NaN in a split .* read past context_len"),
    ("combine_no_max", 4, "combine-large-maxima", r"NaN .* subtract M before exp"),
    ("combine_first_max", 4, "combine-first-split-empty", r"NaN .* M the largest finite m"),
    ("combine_ignores_l", 4, "combine-empty-splits", r"the splits' sums l were left out"),
]


@pytest.mark.slow  # the interpreter: 0.1-1.5 s per case
@pytest.mark.parametrize(("broken", "level", "case", "match"), BROKEN_CASES,
                         ids=[b[0] for b in BROKEN_CASES])
def test_broken_kernel_fails_with_its_bug_named(tmp_path: Path, broken: str, level: int,
                                                case: str, match: str) -> None:
    path = materialize(BROKEN / f"{broken}.py", tmp_path)
    ids = tuple(case.split("|"))
    failures = grade_in_process(path, level, only=ids)
    assert failures, f"{broken} should fail {case} at level {level}"
    assert all(re.search(match, msg) for _, msg in failures), failures


def test_enough_broken_kernels() -> None:
    files = {p.stem for p in BROKEN.glob("[a-z]*.py")}
    assert files == {b[0] for b in BROKEN_CASES}
    assert len(files) >= 20


@pytest.mark.slow
def test_reference_passes_every_level_in_the_sandbox(tmp_path: Path) -> None:
    assert_passes("decode-attention", reference_as_solution("decode-attention", tmp_path),
                  device="cpu")


@pytest.mark.slow
def test_stub_fails_level_1_not_implemented(tmp_path: Path) -> None:
    stub = tmp_path / "decode_attention.py"
    stub.write_text(STUB.read_text(encoding="utf-8"), encoding="utf-8")
    assert_fails("decode-attention", stub, 1, r"softmax: write softmax_kernel",
                 kind="not_implemented", device="cpu")
