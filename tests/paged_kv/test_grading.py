"""paged-kv has teeth: the reference passes every level (through the real sandbox too), the stub
fails as not implemented, and each deliberately broken implementation fails its level with a
message that names the mistake while passing the level below."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.paged_kv.conftest import BROKEN, grade_in_process, materialize

TRACE = ("trace",)
TENSORS = ("gather", "write")

BROKEN_CASES = [
    ("silent_overwrite", 1, r"should raise OutOfBlocks — it needs 1 new block and only 0 "
                            r"are free .* never hand out a block that is still in use"),
    ("off_by_one_boundary", 1, r"holds 4 tokens, so its table needs ceil\(4 / 4\) = 1 block, "
                               r"but it has 2: .* off by one at a block boundary"),
    ("wrong_exception", 1, r"raised IndexError.*out of blocks must raise the specific exception "
                           r"OutOfBlocks"),
    ("highest_block_first", 1, r"you took block \d+, but the lowest-numbered empty block was 0"),
    ("not_all_or_nothing", 1, r"raised OutOfBlocks but changed the manager: num_free\(\) 2 -> 0 "
                              r"— a call that fails must change nothing"),
    ("freed_block_in_table", 2, r"a block counted free while still in a table"),
    ("refcount_not_decremented", 2, r"blocks never released: a reference count not decremented "
                                    r"on free"),
    ("cow_copies_full_blocks", 2, r"returned a copy \(\d+, \d+\), but the last block was full: .* "
                                  r"copy only a shared, partly filled last block"),
    ("cow_no_decrement", 2, r"which no other live sequence holds \(reference count 1\): write in "
                            r"place"),
    ("no_cow", 2, r"wrote into block 1, which seq 1 also hold: the first append into a "
                  r"shared, partly filled last block must copy it \(copy-on-write\)"),
    ("hash_without_parent", 3, r"same 4 tokens .* after a different prefix — .* chain the hash "
                               r"over the parent block's hash"),
    ("evicts_block_in_use", 3, r"a cached block reused as a hit still counts as free: take it off "
                               r"the free \(evictable\) list, or it will be evicted while in use"),
    ("mru_eviction", 3, r"you evicted block 2 \(released at op 3\) before block 1 \(released at "
                        r"op 2, earlier\): evict the least recently used first"),
    ("evicts_before_empty", 3, r"you evicted cached block \d+ while block \d+ was empty"),
    ("partial_block_shared", 3, r"returned 8 cached tokens: hits are whole full blocks of 4 tokens "
                                r"\(at most the prompt's 6\); a partly filled block is never "
                                r"shared"),
    ("not_kept_cached", 3, r"reused 0 cached tokens, expected 4: .*freed blocks stay cached"),
    ("can_allocate_ignores_hits", 3, r"can_allocate\(8 tokens\) returned False, expected True"),
    ("hit_block_zero_falsy", 3, r"reused 0 cached tokens, expected 12"),
    ("duplicate_hash_overwrites", 3, r"block 2 holds this prefix too, but block 1 was cached "
                                     r"under that hash first: .* not registered again"),
    ("fork_aliases_tokens", 2, r"returned offset 3; the new token is position 6"),
    ("fork_aliases_table", 2, r"changed seq 1's table from \[0, 1\] to \[0, 2\]"),
    ("cow_decrement_before_take", 2, r"should raise OutOfBlocks"),
    ("append_token_before_block", 1, r"append_slot\(seq 2, token \d+\) \[seq 2 held 0 tokens\] "
                                     r"raised IndexError"),
    ("free_prefix_first", 3, r"both released by the free at op 2: free releases a table from its "
                             r"last block to its first"),
    ("evicts_lowest_cached", 3, r"you evicted block 0 before block 1"),
    ("fifo_eviction", 3, r"you evicted block 0 before block 1"),
    ("free_unknown_silent", 1, r"free\(seq 9\) should raise ValueError"),
    ("can_allocate_ignores_partial", 1, r"can_allocate\(1 tokens\) returned True, expected False"),
    ("hit_not_counted_in_ref", 3, r"a block counted free while still in a table"),
    ("can_allocate_touches_lru", 3, r"table is \[2, 3, 1\], expected \[2, 3, 0\] — you evicted "
                                    r"block 1 \(released at op 3\) before block 0"),
    ("append_full_not_registered", 3, r"you evicted cached block 1 while block 3 was empty "
                                      r"\(or never cached it: block 1 became full by the "
                                      r"append_slot at op 3, and a block is registered when it "
                                      r"becomes full"),
    ("fork_aliases_hash_chain", 3, r"reused 4 cached tokens, expected 8: Block 1 was filled "
                                   r"by seq 0 after the fork at op 1, and each sequence's hash "
                                   r"chain is its own after a fork"),
    ("seq_ids_as_index", 1, r"block_table\(-1\) returned None; .* sequence ids are any ints, "
                            r"negative ones included"),
    ("cow_appends_copy", 2, r"returned copy \(1, 2\) and appended block 2 to the table \[0, 1, "
                            r"2\]: the copy replaces the shared last block in place"),
    ("gather_wrong_offset", 4, r"wrong block offset: a flat pool index is block \* block_size"),
    ("gather_no_mask", 4, r"no mask: table slots past context_len"),
    ("gather_gqa_tiled", 4, r"GQA heads were tiled"),
    ("gather_ignores_table", 4, r"the block table was ignored"),
    ("gather_context_plus_one", 4, r"one token too many per sequence"),
    ("write_kv_swapped", 4, r"token 1's K belongs at \(block 3, offset 2\) but was written at "
                            r"\[\(2, 3\)\]"),
    # the caller's inputs are read-only
    ("tokens_aliased", 1, r"allocate changed its caller's input in place: token_ids \(operation "
                          r"\d+\), after the call \(the list was kept, not copied"),
    ("gather_scales_q_in_place", 4, r"paged_attention changed its caller's input in place: q\. "
                                    r"The inputs are read-only"),
]


@pytest.mark.parametrize(
    ("broken", "level", "match"),
    # level 4 imports torch (seconds): those run in the slow tier
    [pytest.param(*b, marks=[pytest.mark.slow] if b[1] == 4 else []) for b in BROKEN_CASES],
    ids=[b[0] for b in BROKEN_CASES])
def test_broken_implementation_is_caught(broken: str, level: int, match: str) -> None:
    import re

    kinds = TENSORS if level == 4 else TRACE
    failures = grade_in_process(BROKEN / f"{broken}.py", level, seed=1234, kinds=kinds)
    assert failures, f"{broken} passed level {level}"
    assert any(re.search(match, msg) for _, msg in failures), failures[:3]
    if 1 < level < 4:  # the bug belongs to its level: the level below still passes
        assert grade_in_process(BROKEN / f"{broken}.py", level - 1, seed=1234,
                                kinds=TRACE) == []


@pytest.mark.parametrize("seed", [1, 99])
@pytest.mark.parametrize("level", [1, 2, 3])
def test_reference_passes_trace_levels_on_many_seeds(level: int, seed: int) -> None:
    from lab.exercises.paged_kv import grading

    reference = importlib.import_module(grading.REFERENCE)
    assert grade_in_process(reference, level, seed=seed) == []


@pytest.mark.slow
def test_reference_passes_tensor_cases() -> None:
    from lab.exercises.paged_kv import grading

    reference = importlib.import_module(grading.REFERENCE)
    assert grade_in_process(reference, 4, seed=5, kinds=TENSORS) == []


def test_hidden_cases_change_with_the_seed() -> None:
    from lab.exercises.paged_kv import grading

    for level in (1, 2, 3):
        a = [c.params for c in grading.cases(level, 1) if c.id.startswith("hidden")]
        b = [c.params for c in grading.cases(level, 2) if c.id.startswith("hidden")]
        assert a and a != b
        fixed = [c.id for c in grading.cases(level, 1) if not c.id.startswith("hidden")]
        assert fixed == [c.id for c in grading.cases(level, 2) if not c.id.startswith("hidden")]


@pytest.mark.slow
def test_reference_passes_every_level_through_the_sandbox(tmp_path: Path) -> None:
    run = assert_passes("paged-kv", reference_as_solution("paged-kv", tmp_path), seed=7,
                        timing_repeats=1)
    summaries = [e for e in run.events if e["event"] == "level_summary"]
    assert [s["level"] for s in summaries] == [1, 2, 3, 4]
    notes = {e["case"]: e.get("note", "") for e in run.events if e["event"] == "case_passed"}
    assert "hit rate" in notes["report-cache-workload"]
    assert "reserved contiguously at max_tokens 8,192" in notes["memory-paged-vs-contiguous"]
    assert "decoded token for token" in notes["decode-mixed-lengths-with-forks"]


@pytest.mark.slow
def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("paged-kv", get("paged-kv").stub_path, 1,
                       match=r"not implemented yet \(stub.py:\d+, in \w+\)",
                       kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.slow
def test_broken_fails_through_the_sandbox(tmp_path: Path) -> None:
    assert_fails("paged-kv", materialize(BROKEN / "mru_eviction.py", tmp_path), 3,
                 match=r"evict the least recently used first", kind="wrong")


@pytest.mark.slow
def test_python_loop_gather_fails_the_speed_gate(tmp_path: Path) -> None:
    """Right answers, but a per-token loop: the timed gather case's p95 gate catches it."""
    assert_fails("paged-kv", materialize(BROKEN / "gather_python_loop.py", tmp_path), 4,
                 match=r"correct, but too slow for this level: median_ratio", kind="gate",
                 timing_repeats=3)


@pytest.mark.slow
def test_a_gather_index_cached_by_table_fails_the_speed_gate(tmp_path: Path) -> None:
    """A per-token loop whose result is cached by the tables' contents: each timed call brings
    its own tables, so the loop runs every call and the gate sees it (with one pool and one
    set of tables for every call it ran once and passed at 0.5x)."""
    from lab.grader.testing import only_cases

    assert_fails(only_cases("paged-kv", "gather-timed"),
                 materialize(BROKEN / "gather_index_cached.py", tmp_path), 4,
                 match=r"too slow for this level", kind="gate", timing_repeats=3)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_an_independent_solution_passes(level: int) -> None:
    from tests.paged_kv.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "independent.py", level, seed=31) == []


@pytest.mark.slow
def test_an_independent_solution_passes_level_4() -> None:
    from tests.paged_kv.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "independent.py", 4, seed=31) == []
