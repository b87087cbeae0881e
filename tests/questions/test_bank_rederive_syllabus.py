"""The 2026 syllabus questions: every numeric answer and case-study step re-derived independently.

The five topics the syllabus found missing (FP4, CUDA graphs, benchmarking, reasoning models,
multimodal serving) and the questions added to thin items in older topics (KV offload, routing,
attention kernels, priority scheduling, determinism, KV quantisation). Each function recomputes an
answer from the values the prompt states, written from the physics and not copied from the TOML
formula (derived values are ignored on purpose). The format checks shared with the second edition
(mistakes graded wrong on every draw, whys, counted answers) run over these files too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from questions.bank import BUILTIN_DIR, builtin_files
from questions.validate import validate_files
from tests.questions.test_rederive_and_diagnose import _instances

pytestmark = pytest.mark.slow  # 200 draws and every corner of ~40 questions

V = Mapping[str, Any]
KIB, GIB = 1024, 2**30
SYLLABUS_TOPICS = ["fp4", "cuda-graphs", "benchmarking", "reasoning", "multimodal"]
H100_BF16 = 989e12

# ------------------------------------------------------------------ numeric questions

REDERIVE_2026: dict[str, Callable[[V], float]] = {
    # FP4
    "fp4-001": lambda v: (v["block"] * 4 + v["scale_bits"]) / v["block"],
    "fp4-002": lambda v: (v["expert_b"] * 1e9 * (4 + 8 / 32) + v["other_b"] * 1e9 * 16) / 8 / 1e9,
    "fp4-004": lambda v: (v["tflops"] * 1e12) / (v["tbs"] * 1e12) * (4.5 / 8) / 2,
    "fp4-006": lambda v: 2 * v["layers"] * v["kv_heads"] * 128 * 0.5625 / KIB,
    # CUDA graphs
    "cuda-graphs-001": lambda v: max(v["kernels"] * v["launch_us"] * 1e-3, v["gpu_ms"]),
    "cuda-graphs-002": lambda v: max(v["kernels"] * v["launch_us"] * 1e-3, v["gpu_ms"])
    / v["gpu_ms"],
    "cuda-graphs-003": lambda v: 100 * (1 - v["b"] / (8 * -(-v["b"] // 8))),
    "cuda-graphs-007": lambda v: len([1, 2, 4, *range(8, v["max_bs"] + 1, 8)]) * v["cap_ms"] / 1e3,
    # benchmarking
    "benchmarking-001": lambda v: v["users"] / v["lat_s"],
    "benchmarking-002": lambda v: (v["e2e_s"] - v["ttft_ms"] / 1000) * 1000 / (v["out"] - 1),
    "benchmarking-003": lambda v: round(v["stall_s"] * v["users"] / v["lat_s"]),
    "benchmarking-008": lambda v: v["lat_s"] * v["rate"],
    # reasoning
    "reasoning-001": lambda v: (v["ttft_ms"] + v["thinking"] * v["tpot_ms"]) / 1000,
    "reasoning-002": lambda v: math.floor(
        v["free_gib"] * GIB / (11 * v["in_tokens"] * v["kv_kib"] * KIB)),
    "reasoning-003": lambda v: v["in_tokens"] * v["price_in"] / 1e6
    + (v["thinking"] + v["answer_tokens"]) * v["price_out"] / 1e6,
    "reasoning-007": lambda v: (v["in_tokens"] + v["thinking"]) * v["kv_kib"] * KIB / GIB,
    # multimodal
    "multimodal-001": lambda v: (v["w"] // 28) * (v["h"] // 28),
    "multimodal-002": lambda v: v["images"] * v["enc_ms"] / 1000
    + (v["text_tokens"] + v["images"] * v["img_tokens"]) / v["prefill_tps"],
    "multimodal-003": lambda v: 256 * ((v["w"] // 448) * (v["h"] // 448) + 1),
    "multimodal-007": lambda v: sum(v["enc_ms"] for _ in range(1, v["turns"])),
    # thin items
    "kv-cache-011": lambda v: v["tokens"] * v["kv_kib"] * KIB / (v["pcie"] * 1e9) * 1e3,
    "kv-cache-012": lambda v: (2 * v["params_b"] * 1e9 / (H100_BF16 * v["mfu"] / 100))
    / (v["kv_kib"] * KIB / (v["pcie"] * 1e9)),
    "quantisation-010": lambda v: math.floor(
        v["free_gib"] * GIB / (v["ctx"] * v["kv_kib"] * KIB / 2)),
    "quantisation-012": lambda v: 2 * v["layers"] * 8 * 128 * (4 + 2 * 16 / v["group"]) / 8 / KIB,
    "prefix-caching-011": lambda v: v["new_tokens"] + v["history"] * (v["replicas"] - 1)
    / v["replicas"],
    "prefix-caching-012": lambda v: v["cap"] * 100 / v["hot_pct"],
    "attention-variants-015": lambda v: v["batch"] * (v["prefix"] + v["suffix"])
    / (v["prefix"] + v["batch"] * v["suffix"]),
    "batching-011": lambda v: v["cap"] * (1 - v["g_pct"] / 100 * v["use_frac"]),
    "batching-012": lambda v: v["cap"] * v["w1"] / (v["w1"] + v["w2"]),
    "sampling-020": lambda v: 100 * math.exp(v["tokens"] * math.log1p(-v["p_pct"] / 100)),
}

THIN_MCQS = {
    "kv-cache-013", "quantisation-011", "prefix-caching-010", "attention-variants-016",
    "attention-variants-017", "batching-013", "sampling-018", "sampling-019",
}
THIN_IDS = {qid for qid in REDERIVE_2026 if qid.split("-")[0] not in
            {t.split("-")[0] for t in SYLLABUS_TOPICS}} | THIN_MCQS


# ------------------------------------------------------------------ case studies

def _fp4_007(v: V) -> list[float]:
    weights = (114.7e9 * 4.25 + 2.0e9 * 16) / 8 / GIB
    kv_kib = 2 * 36 * 8 * 64 * 2 / KIB
    return [weights, kv_kib, math.floor((80 - weights) * GIB / (v["ctx"] * kv_kib * KIB))]


def _cuda_graphs_006(v: V) -> list[float]:
    cpu_ms = v["kernels"] * v["launch_us"] / 1000
    step_s = max(cpu_ms, v["gpu_ms"]) / 1000
    return [cpu_ms, v["b"] / step_s, v["b"] / (v["gpu_ms"] / 1000)]


def _benchmarking_006(v: V) -> list[float]:
    req_s = v["n"] / v["dur_s"]
    return [req_s, v["out_tokens"] / v["dur_s"], req_s * v["good_pct"] / 100]


def _reasoning_006(v: V) -> list[float]:
    seat = v["in_tokens"] + v["out_tokens"]
    seats = math.floor(v["free_gib"] * GIB / (seat * v["kv_kib"] * KIB))
    return [seat, seats, seats / (v["out_tokens"] * v["tpot_ms"] / 1000)]


def _multimodal_006(v: V) -> list[float]:
    per_image = (v["w"] // 28) * (v["h"] // 28)
    prompt = v["text_tokens"] + v["images"] * per_image
    return [per_image, prompt, v["images"] * v["enc_ms"] / 1000 + prompt / v["prefill_tps"]]


CASE_REDERIVE_2026: dict[str, Callable[[V], list[float]]] = {
    "fp4-007": _fp4_007,
    "cuda-graphs-006": _cuda_graphs_006,
    "benchmarking-006": _benchmarking_006,
    "reasoning-006": _reasoning_006,
    "multimodal-006": _multimodal_006,
}


# ------------------------------------------------------------------ tests

def _topic_files() -> list[Path]:
    return [BUILTIN_DIR / f"{topic}.toml" for topic in SYLLABUS_TOPICS]


@pytest.fixture(scope="module")
def report() -> Any:
    others = [p for p in builtin_files() if p not in set(_topic_files())]
    return validate_files(_topic_files(), context=others, builtin_dir=BUILTIN_DIR)


@pytest.fixture(scope="module")
def bank() -> Any:
    from questions.bank import load_bank

    return load_bank()


def test_the_syllabus_topics_validate_with_every_kind_and_eight_questions(report: Any) -> None:
    assert [str(p) for p in report.problems] == []
    by_topic: dict[str, set[str]] = {}
    for q in report.questions:
        by_topic.setdefault(q.topic, set()).add(q.kind)
    assert set(by_topic) == set(SYLLABUS_TOPICS)
    for topic in SYLLABUS_TOPICS:
        count = sum(q.topic == topic for q in report.questions)
        assert count >= 8, (topic, count)  # the bank's floor per topic
        assert by_topic[topic] == {"numeric", "mcq", "case"}, topic
        assert "Worked example" in report.topics[topic].note, topic


def test_every_new_numeric_question_has_a_rederivation(bank: Any) -> None:
    new_numeric = {q.id for q in bank.questions if q.kind == "numeric"
                   and (q.topic in SYLLABUS_TOPICS or q.id in THIN_IDS)}
    assert sorted(new_numeric ^ REDERIVE_2026.keys()) == []
    assert {q.id for q in bank.questions if q.kind == "mcq"} >= THIN_MCQS


@pytest.mark.parametrize("qid", sorted(REDERIVE_2026))
def test_answers_match_an_independent_rederivation(bank: Any, qid: str) -> None:
    question = bank.get(qid)
    for inst in _instances(question):
        expected = REDERIVE_2026[qid](inst.values)
        assert inst.answer is not None and math.isfinite(inst.answer)
        assert math.isclose(inst.answer, expected, rel_tol=1e-6, abs_tol=1e-9), (
            f"{qid}: bank {inst.answer!r}, re-derived {expected!r}, values {dict(inst.values)}")


@pytest.mark.parametrize("qid", sorted(CASE_REDERIVE_2026))
def test_case_steps_match_an_independent_rederivation(bank: Any, qid: str) -> None:
    from questions.answers import check_answer

    question = bank.get(qid)
    assert question.kind == "case" and question.difficulty >= 4
    for row in question.cases:
        instance = question.instance(dict(row))
        expected = CASE_REDERIVE_2026[qid](row)
        assert len(expected) == len(instance.steps)
        for step, want in zip(instance.steps, expected, strict=True):
            assert step.answer == pytest.approx(want, rel=1e-6), (qid, dict(row))
            assert check_answer(step, f"{want:.6g}").correct, (qid, want)


def test_every_named_mistake_of_a_thin_item_is_graded_wrong(bank: Any) -> None:
    """Typing a named mistake's value is graded wrong (and diagnosed) on every draw, through the
    checker a learner meets; the validator checks the same for the whole bank by tolerance."""
    from questions.answers import check_answer

    for qid in sorted(THIN_IDS & REDERIVE_2026.keys()):
        question = bank.get(qid)
        assert len(question.mistakes) >= 2, qid
        for inst in _instances(question):
            for mistake, value in inst.mistake_values():
                result = check_answer(inst, f"{value:.6g}")
                assert not result.correct, (qid, mistake.id, dict(inst.values))
