"""tensor-parallel has teeth: the reference passes every level (through the real, confined
sandbox too), the stub fails as not implemented, each deliberately broken implementation fails
its level with a message that names the mistake, and the ranks are separate processes on
torch.distributed."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.tensor_parallel.conftest import BROKEN, grade_in_process, materialize

# (broken file, level, the case that catches it, what the verdict must say)
BROKEN_CASES = [
    ("column_no_gather", 1, "column-gather-w2",
     r"has shape \(3, 4\), expected \(3, 8\) — gather every rank's \[rows, out/W\] slice"),
    ("column_gather_dim0", 1, "column-gather-w2",
     r"has shape \(6, 4\), expected \(3, 8\) — gather .* along the last dimension"),
    ("column_strided_shard", 1, "column-gather-w2",
     r"weight shard differs .* a column-parallel shard is rows \[0, 4\) .*contiguous"),
    ("column_all_reduce_padded", 1, "column-gather-w2",
     r"called all_reduce x1; expected all_gather x1 .* moves W times the bytes"),
    ("default_group", 1, "column-gather-w2",
     r"called all_gather on another process group .* pass group=group"),
    ("row_bias_every_rank", 1, "row-parallel-input-w2",
     r"the bias was added on every rank before the all-reduce, so the sum holds it 2 times"),
    ("row_no_all_reduce", 1, "row-parallel-input-w2",
     r"this is the rank's partial sum: .* summed across ranks with an all-reduce"),
    ("row_first_slice_everywhere", 1, "row-full-input-w4",
     r"rank 0's output differs from the single-process layer: .* sum the partial products"),
    ("row_reduce_on_rank0_only", 1, "row-parallel-input-w2",
     r"the ranks called different collectives \(rank 0 called all_reduce x1; rank 1 called "
     r"no collective\) .* same collectives in the same order"),
    ("no_divisibility_check", 1, "refuse-column-10-by-4",
     r"out_features = 10 at world size 4 was accepted: 10 does not divide by 4"),
    ("assert_instead_of_valueerror", 1, "refuse-column-10-by-4",
     r"raised AssertionError .*; expected ValueError"),
    ("vague_refusal", 1, "refuse-column-10-by-4",
     r"the ValueError says 'uneven split': a clear refusal names the size \(10\)"),
    ("mlp_gathers_then_reduces", 2, "mlp-w2",
     r"called all_gather x2, all_reduce x1; expected all_reduce x1"),
    ("mlp_reduced_twice", 2, "mlp-w2",
     r"the output is 2x the single-process one: the partial sums were reduced twice"),
    ("plan_floor_kv_split", 2, "head-plan",
     r"head_plan\(8, 2, world_size=4, rank=0\): KV heads \[\], expected \[0\] — 4 does not "
     r"divide 2 KV heads"),
    ("plan_silent_replication", 2, "head-plan",
     r"replicated=False, expected True — say so"),
    ("attn_no_causal_mask", 2, "attn-split-w2", r"attention without the causal mask"),
    ("attn_o_first_columns", 2, "attn-split-w2",
     r"rank 0's attention output differs .* o_proj's columns for those heads"),
    ("attn_positions_from_zero", 3, "decode-w2-prompt0",
     r"token 1 is \d+, .* the first token is right, so the prefill is; a step goes wrong"),
    ("decode_position_reset", 3, "decode-w2-prompt0", r"a step goes wrong .* \(RoPE\)"),
    ("decode_full_kv_cache", 3, "decode-w2-prompt0",
     r"layer-0 cache holds all 4 KV heads: each rank caches only its own KV heads \[0, 1\]"),
    ("decode_extra_barrier", 3, "decode-w2-prompt0",
     r"decode step 1 called 24 collectives \(16 all-reduces, barrier\); expected 16"),
    # the boundary KV heads == W, inputs untouched, and messages naming the real cause
    ("plan_kv_eq_world_replicated", 2, "head-plan-kv-eq-world",
     r"head_plan\(8, 4, world_size=4, rank=0\): replicated=True, expected False — W = 4 "
     r"divides 4 KV heads \(equal counts included"),
    ("row_masks_input_in_place", 1, "row-full-input-w4",
     r"rank 0: RowParallelLinear.forward changed its caller's input in place: x\. The inputs "
     r"are read-only"),
    ("decode_norms_swapped", 3, "decode-w2-prompt0",
     r"rank 0's layer-0 cached values equal v_proj\(rms_norm\(x, post_attention_layernorm"
     r"\.weight\)\): the two RMSNorm weights are swapped"),
    ("decode_ctor_raises_on_rank1", 3, "decode-w2-prompt0",
     r"rank 1 raised SafetensorError \(line \d+, in full\): File does not contain tensor "
     r"lm_head\.weight — its own code raised, outside any collective; then rank 0 failed "
     r"inside all_reduce"),
    ("decode_two_gathers", 3, "decode-w2-prompt0",
     r"decode step 1 called 18 collectives \(16 all-reduces, 2 all-gathers\); expected 16 "
     r"all-reduces .* and at most one all-gather"),
]
PURE = {"head-plan", "head-plan-kv-eq-world"}  # cases that start no ranks


@pytest.mark.parametrize(
    ("broken", "level", "case", "match"),
    [pytest.param(*b, marks=[] if b[2] in PURE else [pytest.mark.slow]) for b in BROKEN_CASES],
    ids=[b[0] for b in BROKEN_CASES])
def test_broken_implementation_is_caught(broken: str, level: int, case: str,
                                         match: str) -> None:
    failures = grade_in_process(BROKEN / f"{broken}.py", level, only=(case,))
    assert failures, f"{broken} passed {case}"
    assert re.search(match, failures[0][1]), failures


def test_enough_broken_implementations() -> None:
    """The bar: 15+ broken implementations, each a file that mutates the reference."""
    files = {p.stem for p in BROKEN.glob("[a-z]*.py")}
    assert len(BROKEN_CASES) >= 15
    assert files == {b[0] for b in BROKEN_CASES}


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2, 3])
def test_reference_passes_in_process(level: int) -> None:
    from lab.exercises.tensor_parallel import grading

    assert grade_in_process(importlib.import_module(grading.REFERENCE), level, seed=5) == []


@pytest.mark.slow
def test_ranks_are_separate_processes_on_torch_distributed() -> None:
    """W = 4 ranks: four pids, none of them this process, one gloo process group, and each
    rank's all-gather went over it (the collective log is the group's, counted per rank)."""
    from lab.exercises.tensor_parallel import drive, grading
    from lab.grader.api import RunContext

    reference = importlib.import_module(grading.REFERENCE)
    case = next(c for c in grading.cases(1, 3) if c.id == "column-gather-w4-nobias")
    ranks = drive.run(reference, case, RunContext(device="cpu", seed=3))["ranks"]
    pids = [r["pid"] for r in ranks]
    assert len(set(pids)) == 4 and os.getpid() not in pids
    assert {r["backend"] for r in ranks} == {"gloo"}
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    for r in ranks:  # 3 rows x 12/4 fp32 outputs gathered once, on the handed-in group
        assert r["log"] == [["all_gather", True, 3 * 3 * 4]]


@pytest.mark.slow
def test_dense_decode_equals_transformers_greedy() -> None:
    """The grader's single-process decode (level 3's expected tokens) is the model's own
    greedy decoding: transformers' generate on the shipped target gives the same tokens."""
    import torch

    from lab.exercises.tensor_parallel import runtime
    from lab.exercises.tensor_parallel.grading import level3
    from lab.models.loading import load_model

    model = load_model(runtime.SHIPPED_TARGET, device="cpu", dtype="float32")
    for prompt in level3.PROMPTS:
        want = level3._dense(str(runtime.SHIPPED_TARGET), tuple(prompt), 12)["tokens"]
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                 min_new_tokens=12)
        assert out[0, len(prompt):].tolist() == want


@pytest.mark.slow
def test_reference_passes_every_level_through_the_sandbox(tmp_path: Path) -> None:
    """Through the real sandbox (namespaces where the machine allows: the ranks then talk over
    the sandbox's own loopback), with level 3's bytes-per-token figure beside the formula."""
    run = assert_passes("tensor-parallel", reference_as_solution("tensor-parallel", tmp_path),
                        seed=7)
    summaries = [e for e in run.events if e["event"] == "level_summary"]
    assert [s["level"] for s in summaries] == [1, 2, 3]
    notes = {e["case"]: e.get("note", "") for e in run.events if e["event"] == "case_passed"}
    assert ("moved 16384 bytes per rank per token; formula 2(W-1)/W x hidden 256 x 4 B = "
            "1024 B per all-reduce x 16 all-reduces = 16384 B") in notes["decode-w2-prompt0"]


@pytest.mark.slow
def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("tensor-parallel", get("tensor-parallel").stub_path, 1,
                       match=r"not implemented yet .*ColumnParallelLinear.__init__ \(rank 0, "
                             r"line \d+, in __init__\)", kind="not_implemented")
    assert {f["kind"] for f in run.failures} <= {"not_implemented", "skipped"}


@pytest.mark.slow
def test_broken_fails_through_the_sandbox(tmp_path: Path) -> None:
    assert_fails("tensor-parallel", materialize(BROKEN / "row_bias_every_rank.py", tmp_path), 1,
                 match=r"add it once, after the all-reduce", kind="wrong")


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2, 3])
def test_an_independent_solution_passes(level: int) -> None:
    """Another correct design (torch.chunk shards, explicit softmax attention, a fused gate/up
    matmul, a vocabulary-parallel head joined by an all-gather) passes too."""
    from tests.tensor_parallel.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "independent.py", level, seed=31) == []


@pytest.mark.slow
def test_spawned_ranks_load_the_learners_file_by_path(tmp_path: Path) -> None:
    """The CUDA path cannot fork (CUDA dies in a forked child): ranks are spawned interpreters
    that load the learner's file by path and hand results back through files. Exercised here on
    the CPU so the mechanics are tested on a machine without a GPU."""
    from lab.exercises.tensor_parallel import drive, grading, runtime
    from lab.grader.api import RunContext
    from tests.tensor_parallel.conftest import load_solution

    solution = load_solution(reference_as_solution("tensor-parallel", tmp_path))
    case = next(c for c in grading.cases(1, 3) if c.id == "column-gather-w2")
    fn = drive._Bound(drive._linear, dict(case.params), "cpu")
    store = str(tmp_path / "store")
    ranks = runtime._spawned(solution, 2, fn, "cpu", "gloo", store, 30.0)
    assert len({r["pid"] for r in ranks}) == 2 and os.getpid() not in {r["pid"] for r in ranks}
    verdict = grading.check(case, {"ranks": ranks}, grading.expected(case, RunContext()))
    assert verdict.passed, verdict.message
    assert not list(tmp_path.glob("store.rank*"))  # result files removed after reading
