"""Facts in the bank that the field moved past, pinned as they read now (late 2026).

Each was found stale by an audit; the test holds the corrected wording so an edit cannot quietly
bring the old claim back."""

from __future__ import annotations

import pytest

from questions.bank import load_bank


@pytest.fixture(scope="module")
def bank():  # type: ignore[no-untyped-def]
    return load_bank()


def test_fp8_tensor_cores_are_in_ada_as_well_as_hopper(bank) -> None:  # type: ignore[no-untyped-def]
    q = bank.get("quantisation-005")
    assert "Ada (L4, L40S) and Hopper" in q.explanation
    assert "FP8 tensor cores arrived with Hopper (H100)." not in q.explanation


def test_vllm_v1_preempts_by_recompute_only(bank) -> None:  # type: ignore[no-untyped-def]
    q = bank.get("batching-010")
    assert "V1 engine preempts by\nrecompute only" in q.explanation
    assert "swapping to CPU is an" not in q.explanation


def test_chunked_prefill_is_on_by_default_in_v1(bank) -> None:  # type: ignore[no-untyped-def]
    assert "on by default in vLLM's V1 engine" in bank.get("latency-008").explanation


def test_speculation_under_load_is_qualified_by_drafter(bank) -> None:  # type: ignore[no-untyped-def]
    note = bank.topics["speculative"].note
    assert "2024" in note and "EAGLE-3" in note and "suffix decoding" in note
    variants = bank.topics["speculative-variants"].note
    assert "**EAGLE-3**" in variants and "**Suffix decoding**" in variants
    for qid in ("speculative-008", "speculative-variants-011"):
        assert "2024" in bank.get(qid).explanation, qid


def test_sampling_015_names_no_single_transformers_minor(bank) -> None:  # type: ignore[no-untyped-def]
    q = bank.get("sampling-015")
    assert all("5.24" not in s for s in q.sources)


@pytest.mark.slow
def test_sampling_015s_fact_holds_for_the_installed_transformers() -> None:
    """The question's claim: TopPLogitsWarper(top_p=1.0) cuts ids whose FP32 probability is 0."""
    import torch
    from transformers import TopPLogitsWarper

    logits = torch.tensor([[0.0, -50.0, -110.0, -200.0]])
    out = TopPLogitsWarper(top_p=1.0)(torch.zeros((1, 1), dtype=torch.long), logits.clone())
    assert out[0, :2].tolist() == [0.0, -50.0]
    assert torch.isinf(out[0, 2:]).all()
