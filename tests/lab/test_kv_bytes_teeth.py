"""kv-bytes has teeth: the reference and an independent solution pass on several seeds, and every
deliberately broken implementation fails its level with a message naming the mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.lab.conftest import BROKEN, SOLUTIONS


@pytest.mark.slow
def test_reference_passes_every_level(tmp_path: Path) -> None:
    assert_passes("kv-bytes", reference_as_solution("kv-bytes", tmp_path), seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_independent_solution_agrees_with_the_reference(seed: int) -> None:
    assert_passes("kv-bytes", SOLUTIONS / "correct.py", seed=seed)


def test_stub_fails_both_levels_as_not_implemented(tmp_path: Path) -> None:
    from lab.exercises import get

    run = assert_fails("kv-bytes", get("kv-bytes").stub_path, 1,
                       match=r"not implemented yet \(stub.py:\d+, in kv_bytes_per_token\)$",
                       kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.parametrize(
    ("broken", "level", "match"),
    [
        ("no_factor_two", 1, r"the cache stores both \(factor 2\)"),
        ("query_heads", 1, r"you used num_attention_heads.*num_key_value_heads"),
        ("ignores_head_dim", 1, r"the config sets head_dim explicitly"),
        ("fractional_int4", 1, r"must return an int, got float .* whole bytes"),
        ("fp8_two_bytes", 1, r"'(fp8|float8_\w+)' has 8 bits per value; you used 16"),
        ("accepts_unknown_dtype", 1, r"should raise ValueError here \(unknown dtype 'float64'\)"),
        ("requires_kv_key", 1, r"KeyError \(_kvbase.py:\d+, in kv_bytes_per_token\)"),
        ("no_block_rounding", 2, r"the cache is paged"),
        ("no_reserve", 2, r"subtract reserve_bytes"),
        ("weights_not_split", 2, r"each holds ceil\(weight_bytes / tp\)"),
        ("kv_heads_zero_is_mha", 1, r"should raise ValueError here \(num_key_value_heads must be "
                                    r"a positive int, got 0\)"),
        ("head_dim_zero_derived", 1, r"should raise ValueError here \(head_dim must be a "
                                     r"positive int, got 0\)"),
        ("hidden_checked_first", 1, r"raised ValueError\('hidden % heads'\) but the input is "
                                    r"valid: expected 6144"),
        ("replicas_unchecked", 2, r"should raise ValueError here \(4 KV heads cannot be "
                                  r"replicated over 6 GPUs\)"),
        ("weights_floor", 2, r"expected 0, got 1 — each GPU holds ceil\(weight_bytes / tp\)"),
        ("memory_unchecked", 2, r"should raise ValueError here \(gpu_mem_bytes must be a "
                                r"non-negative int, got -1\)"),
        ("no_half", 1, r"raised ValueError\('unknown dtype half'\) but the input is valid"),
        ("fills_config_defaults", 1, r"kv_bytes_per_token changed its caller's input in place: "
                                     r"config\. The inputs are read-only"),
    ],
)
@pytest.mark.slow
def test_broken_implementation_is_caught(broken: str, level: int, match: str) -> None:
    # a capacity bug leaves level 1 intact (graded in the same run)
    assert_fails("kv-bytes", BROKEN / f"{broken}.py", level, match=match,
                 intact=(1,) if level == 2 else ())


def test_failure_report_shows_the_smallest_case_and_the_seed() -> None:
    from lab.grader.testing import grade_file

    run = grade_file("kv-bytes", BROKEN / "no_factor_two.py", 1, seed=99)
    summary = next(e for e in run.events if e["event"] == "level_summary")
    smallest = summary["smallest_failure"]
    sizes = [f["size"] for f in run.failures if f["required"]]
    assert smallest["size"] == min(sizes)
    assert smallest["case"] == "tiny-one-layer"
    failure = next(f for f in run.failures if f["case"] == "tiny-one-layer")
    assert failure["expected"] == "{'value': 32}" and failure["got"] == "{'value': 16}"
    assert failure["replay"] == "dojo lab grade kv-bytes --level 1 --seed 99"


def test_hidden_cases_differ_between_seeds_and_replay_exactly() -> None:
    from lab.exercises.kv_bytes import grading

    assert grading.cases(1, 5) == grading.cases(1, 5)
    hidden = [c for c in grading.cases(2, 5) if c.id.startswith("hidden")]
    assert hidden != [c for c in grading.cases(2, 6) if c.id.startswith("hidden")]
    assert len(hidden) >= 20


def test_check_messages_for_float_results() -> None:
    from lab.exercises.kv_bytes import grading

    case = next(c for c in grading.cases(1, 0) if c.id == "llama3-8b-gqa-bf16")
    right_but_float = grading.check(case, {"value": 131072.0}, {"value": 131072})
    assert not right_but_float.passed
    assert "the number is right; return an int" in right_but_float.message
    assert grading.check(case, {"value": 131072}, {"value": 131072}).passed
    raised = grading.check(case, {"raised": "ValueError", "message": "nope"}, {"value": 131072})
    assert not raised.passed and "but the input is valid: expected 131072" in raised.message


@pytest.mark.parametrize(("broken", "level", "case_id", "match"), [
    ("memory_unchecked", 2, "negative-reserve", r"reserve_bytes must be a non-negative int"),
    ("no_half", 1, "dtype-half", r"unknown dtype half'\) but the input is valid"),
    ("fills_config_defaults", 1, "llama2-7b-mha-fp16", r"kv_bytes_per_token changed its caller's "
                                                       r"input in place: config\. The inputs "
                                                       r"are read-only"),
])
def test_a_bound_or_alias_bug_fails_its_case(broken: str, level: int, case_id: str,
                                             match: str) -> None:
    """In process, one case: the reference and the independent solution pass it, the broken
    one fails it naming the bound or the alias."""
    import importlib
    import importlib.util
    import re
    import sys

    from lab.exercises.kv_bytes import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(level, 1) if c.id == case_id)
    ctx = RunContext(seed=1)
    want = drive.run(importlib.import_module(grading.REFERENCE), case, ctx)
    def load(path: Path) -> object:
        spec = importlib.util.spec_from_file_location(f"_kv_teeth_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    sys.path.insert(0, str(BROKEN))  # the broken files import _kvbase
    try:
        correct, bad = load(SOLUTIONS / "correct.py"), load(BROKEN / f"{broken}.py")
    finally:
        sys.path.remove(str(BROKEN))
    assert grading.check(case, drive.run(correct, case, ctx), want).passed
    verdict = grading.check(case, drive.run(bad, case, ctx), want)
    assert not verdict.passed and re.search(match, verdict.message), verdict.message
