"""Independent re-derivation of every parameterised numeric answer in the built-in bank.

Each function below recomputes an answer from the *drawn parameters only*, written from the
question's prompt rather than copied from its TOML formula (derived values are ignored on purpose).
Comparing them with the loader's answers over many seeded draws catches a wrong formula, a typo in
a constant, or a unit slip in either place. The bank-wide size and mix targets are checked too.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

V = Mapping[str, Any]
KIB = 1024
GIB = 2**30
HOURS_PER_GPU_MONTH = 730


def _tau(alpha: float, k: int) -> float:
    """Expected tokens per target pass: 1 + α + … + α^k, summed term by term."""
    return sum(alpha**i for i in range(k + 1))


def _kv_per_token(layers: int, kv_heads: float, head_dim: int, nbytes: float) -> float:
    return 2 * layers * kv_heads * head_dim * nbytes


# Constants from the models' config.json files and the vendors' spec sheets, typed in again here
# so that a wrong figure in a question's cases fails the test instead of being trusted.
MODEL_SHAPES = {  # name: (layers, query heads, KV heads, head_dim)
    "Llama-2-7B": (32, 32, 32, 128),
    "Llama-2-13B": (40, 40, 40, 128),
    "Llama-2-70B": (80, 64, 8, 128),
    "Llama-3-8B": (32, 32, 8, 128),
    "Llama-3-70B": (80, 64, 8, 128),
    "Llama-3.1-405B": (126, 128, 8, 128),
    "Mistral-7B v0.1": (32, 32, 8, 128),
    "Qwen2.5-72B": (80, 64, 8, 128),
}
GPUS = {  # name: (dense BF16 FLOP/s, memory bandwidth B/s)
    "H100 SXM": (989e12, 3.35e12),
    "H200 SXM": (989e12, 4.8e12),
    "B200 (HGX)": (2250e12, 8e12),
    "A100 80GB SXM": (312e12, 2.039e12),
    "L40S (PCIe)": (362e12, 0.864e12),
}
FLEET_MODELS = {  # name: (tok/s per H100, API $ per 1M tokens)
    "an 8B chat model": (10_000.0, 0.20),
    "a 70B model (FP8)": (700.0, 2.50),
}
VS_H100 = {"B200": 2.4, "used A100": 0.45}


def _fleet_model(v: V) -> tuple[float, float]:
    tps, api = FLEET_MODELS[v["model_name"]]
    assert (v["tps"], v["api"]) == (tps, api), "case row disagrees with the scenario figures"
    return tps, api


def _spec_001(v: V) -> float:
    return _tau(v["alpha"], v["k"])


def _spec_002(v: V) -> float:
    return _tau(v["alpha"], v["k"]) / (1 + v["k"] * v["c"])


def _spec_003(v: V) -> float:
    return v["rate"] * _tau(v["alpha"], v["k"]) / (1 + v["k"] * v["c"])


def _spec_005(v: V) -> float:
    accepted = round(v["drafts"] * v["k"] * v["frac"])
    return 1 + accepted / v["drafts"]


def _spec_006(v: V) -> float:
    # break-even: τ = 1 + k·c  →  c = (τ − 1) / k
    return (_tau(v["alpha"], v["k"]) - 1) / v["k"]


def _spec_007(v: V) -> float:
    expected_accepted = sum(v["alpha"] ** i for i in range(1, v["k"] + 1))
    return 100 * expected_accepted / v["k"]


def _spec_011(v: V) -> float:
    return 100 * math.prod([v["alpha"]] * v["k"])


def _spec_012(v: V) -> float:
    return v["n"] / _tau(v["alpha"], v["k"])


def _kv_001(v: V) -> float:
    layers, q_heads, kv_heads, head_dim = MODEL_SHAPES[v["model"]]
    shown = (v["layers"], v["q_heads"], v["kv_heads"], v["head_dim"])
    assert shown == (layers, q_heads, kv_heads, head_dim), "case row disagrees with config.json"
    return _kv_per_token(layers, kv_heads, head_dim, v["bytes"]) / KIB


def _kv_003(v: V) -> float:
    return _kv_per_token(80, 8, 128, v["bytes"]) * v["ctx"] / GIB


H100_BYTES = 81_559 * 2**20  # nvidia-smi total: the marketed "80 GB" is 80 GiB of HBM
H200_BYTES = 143_771 * 2**20  # the marketed "141 GB"


def _kv_004(v: V) -> float:
    free_bytes = H100_BYTES * v["util_pct"] / 100 - 8.03e9 * 2 - v["reserve"] * GIB
    return float(math.floor(free_bytes / (_kv_per_token(32, 8, 128, 2) * v["ctx"])))


def _kv_005(v: V) -> float:
    free_bytes = H200_BYTES * v["util_pct"] / 100 - 70.55e9 - v["reserve"] * GIB
    return free_bytes / _kv_per_token(80, 8, 128, v["kv_bytes"])


def _kv_006(v: V) -> float:
    return v["q_heads"] / v["kv_heads"]


def _kv_007(v: V) -> float:
    free_bytes = 8 * (H200_BYTES * v["util_pct"] / 100 - v["reserve"] * GIB) - 405.85e9
    return free_bytes / _kv_per_token(126, 8, 128, v["kv_bytes"])


def _kv_010(v: V) -> float:
    return v["batch"] * v["ctx"] * _kv_per_token(32, 32, 128, 2) / GIB


def _roof_001(v: V) -> float:
    flops, bw = GPUS[v["gpu_name"]]
    assert (v["tflops"] * 1e12, v["bw"] * 1e12) == pytest.approx((flops, bw))
    return flops / bw


def _roof_002(v: V) -> float:
    # intensity per sequence = 2 FLOPs per parameter ÷ bytes per parameter
    return (989e12 / 3.35e12) / (2 / v["wbytes"])


def _roof_003(v: V) -> float:
    seconds = 2 * v["params"] * 1e9 * v["tokens"] / (989e12 * v["mfu_pct"] / 100)
    return seconds * 1000


def _roof_004(v: V) -> float:
    nbytes = 8.03e9 * 2 + v["batch"] * v["ctx"] * _kv_per_token(32, 8, 128, 2)
    return nbytes / 3.35e12 * 1000


def _roof_005(v: V) -> float:
    _, bw = GPUS[v["gpu_name"]]
    assert v["bw"] * 1e12 == pytest.approx(bw)
    return bw / (v["params"] * 1e9 * v["wbytes"])


def _roof_008(v: V) -> float:
    return 70.55e9 / (v["ctx"] * _kv_per_token(80, 8, 128, 2))


def _roof_010(v: V) -> float:
    attention = 2 * 32 * 4096 * v["tokens"] ** 2
    matmuls = 2 * 8.03e9 * v["tokens"]
    return 100 * attention / matmuls


def _batch_001(v: V) -> float:
    arrivals = [i * v["gap"] for i in range(v["bmax"])]
    return min(arrivals[-1], v["wait"])


def _batch_003(v: V) -> float:
    lengths = [v["lmax"]] + [v["lshort"]] * (v["b"] - 1)
    return 100 * sum(lengths) / (len(lengths) * max(lengths))


def _batch_004(v: V) -> float:
    return v["batch"] / ((v["a"] + v["b"] * v["batch"]) / 1000)


def _batch_005(v: V) -> float:
    best = 0
    while v["a"] + v["b"] * (best + 1) <= v["slo"] + 1e-9:
        best += 1
    return float(best)


def _batch_006(v: V) -> float:
    tput_b = v["batch"] / (v["a"] + v["b"] * v["batch"])
    tput_1 = 1 / (v["a"] + v["b"])
    return tput_b / tput_1


def _paged_001(v: V) -> float:
    return 100 * (v["maxlen"] - v["used"]) / v["maxlen"]


def _paged_002(v: V) -> float:
    return float((-v["n"]) % v["bs"])


def _paged_003(v: V) -> float:
    return float(int(v["free"] * GIB) // (v["bs"] * 131_072))  # the log's GiB


def _paged_005(v: V) -> float:
    slots = -(-v["length"] // 16) * 16
    return float(v["cap"] // slots)


def _paged_007(v: V) -> float:
    unshared = v["n"] * (v["p"] + v["o"])
    shared = v["p"] + v["n"] * v["o"]
    return 100 * (unshared - shared) / unshared


def _prefix_001(v: V) -> float:
    saved = (v["n"] - 1) * v["s"]
    return 100 * saved / (v["n"] * (v["s"] + v["u"]))


def _prefix_002(v: V) -> float:
    return v["o"] + v["u"] / v["rate"] * 1000


def _prefix_003(v: V) -> float:
    h = v["h_pct"] / 100
    return (1 - h) * v["p"] + h * v["p"] / 10


def _prefix_006(v: V) -> float:
    return float(v["s"] - v["s"] % v["bs"])


def _prefix_008(v: V) -> float:
    return (v["n"] - 1) * v["s"] * 128 * KIB / GIB


def _lat_001(v: V) -> float:
    return (v["ttft"] + (v["n"] - 1) * v["tpot"]) / 1000


def _lat_002(v: V) -> float:
    return (v["e2e"] * 1000 - v["ttft"]) / (v["n"] - 1)


def _lat_003(v: V) -> float:
    return 100 * (1 - (v["p_pct"] / 100) ** v["n"])


def _lat_004(v: V) -> float:
    return 100 * math.exp(math.log(v["target_pct"] / 100) / v["n"])


def _lat_007(v: V) -> float:
    seconds = (v["ttft"] + (v["n"] - 1) * v["tpot"]) / 1000
    return v["lam"] * seconds


def _lat_009(v: V) -> float:
    return float(-(-(v["q"] * v["n"]) // 100))  # exact integer ceil(q·n/100)


def _dis_002(v: V) -> float:
    return _kv_per_token(80, 8, 128, v["b"]) * v["t"] / 1e9


def _dis_003(v: V) -> float:
    bits = _kv_per_token(80, 8, 128, v["b"]) * v["t"] * 8
    return bits / (v["nic"] * 1e9) * 1000


def _dis_004(v: V) -> float:
    return v["rate"] * v["t"] * _kv_per_token(80, 8, 128, 2) * 8 / 1e9


def _dis_005(v: V) -> float:
    return (v["i"] / v["pp"]) / (v["o"] / v["pd"])


def _dis_008(v: V) -> float:
    return v["gb"] / 450 * 1000


def _quant_001(v: V) -> float:
    return v["params"] * v["bits"] / 8


def _quant_002(v: V) -> float:
    per_gpu = 80 * 2**30 * v["f_pct"] / 100  # an H100's "80 GB" is 80 GiB
    weights = v["params"] * 1e9 * v["bits"] / 8
    tp = 1
    while tp * per_gpu < weights:
        tp *= 2
    return float(tp)


def _quant_003(v: V) -> float:
    return (8.03 * 2 + v["kv"]) / (8.03 * v["bits"] / 8 + v["kv"])


def _quant_006(v: V) -> float:
    free = 48e9 * v["util_pct"] / 100 - 8.03e9 - v["reserve"] * 1e9
    return float(math.floor(free / (_kv_per_token(32, 8, 128, 1) * v["ctx"])))


def _quant_007(v: V) -> float:
    weight_bits = v["params"] * 1e9 * 4
    scale_bits = v["params"] * 1e9 / v["g"] * 16
    return (weight_bits + scale_bits) / 8 / 1e9


def _quant_009(v: V) -> float:
    return 4.8e12 / (12.9e9 * v["b"])


def _par_001(v: V) -> float:
    return v["params"] * v["b"] / v["tp"]


def _par_002(v: V) -> float:
    return _kv_per_token(80, 8, 128, v["b"]) / v["tp"] / KIB


def _par_004(v: V) -> float:
    message = v["batch"] * 8192 * 2
    ring_factor = 2 * (v["tp"] - 1) / v["tp"]
    return 80 * 2 * ring_factor * message / 1e6


def _par_010(v: V) -> float:
    activation = 256 * 4  # one token's hidden state in FP32
    ring_factor = 2 * (v["w"] - 1) / v["w"]
    return 8 * 2 * ring_factor * activation


def _par_012(v: V) -> float:
    # each rank keeps every KV head one of its own query heads reads
    q_per_rank, q_per_kv = 8 // v["w"], 8 // v["kv"]
    stored = sum(len({q // q_per_kv for q in range(r * q_per_rank, (r + 1) * q_per_rank)})
                 for r in range(v["w"]))
    return stored / v["kv"]


def _par_006(v: V) -> float:
    shard_bytes = 70.55e9 * v["b"] / v["tp"]
    return 3.35e12 / shard_bytes


def _par_008(v: V) -> float:
    return 100 * (v["p"] - 1) / (v["m"] + v["p"] - 1)


def _price(i: float, o: float, pin: float, pout: float) -> float:
    return (i * pin + o * pout) / 1e6


def _met_001(v: V) -> float:
    return _price(v["i"], v["o"], v["pin"], 5 * v["pin"])


def _met_002(v: V) -> float:
    return 30 * v["daily"] * _price(v["i"], v["o"], 3, 15)


def _met_003(v: V) -> float:
    cached = round(v["i"] * v["sfrac"])
    return _price(v["i"] - cached, v["o"], 15, 75) + cached * 1.5 / 1e6


def _met_004(v: V) -> float:
    extra = v["r_pct"] / 100
    return 100 * extra / (1 + extra)


def _met_005(v: V) -> float:
    # expected attempts of a geometric distribution, summed as a series
    p = v["p"]
    attempts = sum((n + 1) * p**n * (1 - p) for n in range(400))
    return 100 * (attempts - 1)


def _met_007(v: V) -> float:
    agent = _price(12_000, 4_000, 3, 15) * v["a_pct"]
    chat = _price(800, 300, 3, 15) * (100 - v["a_pct"])
    return 100 * agent / (agent + chat)


def _met_008(v: V) -> float:
    return _price(v["i"], v["o"], v["pin"], 5 * v["pin"]) / (v["i"] + v["o"]) * 1e6


def _fleet_tokens(tps: float) -> float:
    return tps * 3600 * HOURS_PER_GPU_MONTH


def _fleet_001(v: V) -> float:
    return _fleet_tokens(v["tps"])


def _fleet_002(v: V) -> float:
    tps, _ = _fleet_model(v)
    return v["c"] / (_fleet_tokens(tps) * v["u_pct"] / 100 / 1e6)


def _fleet_003(v: V) -> float:
    tps, api = _fleet_model(v)
    return 100 * v["c"] / (_fleet_tokens(tps) / 1e6 * api)


def _fleet_004(v: V) -> float:
    tps, api = _fleet_model(v)
    return 100 * 1.35 * v["c"] / (_fleet_tokens(tps) / 1e6 * api)


def _fleet_005(v: V) -> float:
    tps, _ = _fleet_model(v)
    return float(math.ceil(v["d"] * 1e9 / (_fleet_tokens(tps) * v["u_pct"] / 100)))


def _fleet_006(v: V) -> float:
    extra = round(v["base"] * v["mult"])
    return 100 * extra * v["h"] / (v["base"] * 24 + extra * v["h"])


def _fleet_007(v: V) -> float:
    own = v["c"] / (_fleet_tokens(700) * v["u_pct"] / 100) * 1e6
    api_share = v["o_pct"] / 100
    return (1 - api_share) * own + api_share * 2.50


def _fleet_008(v: V) -> float:
    assert v["factor"] == VS_H100[v["gpu_name"]]
    return VS_H100[v["gpu_name"]] * v["c"]


REDERIVE: dict[str, Callable[[V], float]] = {
    "speculative-001": _spec_001,
    "speculative-002": _spec_002,
    "speculative-003": _spec_003,
    "speculative-005": _spec_005,
    "speculative-006": _spec_006,
    "speculative-007": _spec_007,
    "speculative-011": _spec_011,
    "speculative-012": _spec_012,
    "kv-cache-001": _kv_001,
    "kv-cache-003": _kv_003,
    "kv-cache-004": _kv_004,
    "kv-cache-005": _kv_005,
    "kv-cache-006": _kv_006,
    "kv-cache-007": _kv_007,
    "kv-cache-010": _kv_010,
    "roofline-001": _roof_001,
    "roofline-002": _roof_002,
    "roofline-003": _roof_003,
    "roofline-004": _roof_004,
    "roofline-005": _roof_005,
    "roofline-008": _roof_008,
    "roofline-010": _roof_010,
    "batching-001": _batch_001,
    "batching-003": _batch_003,
    "batching-004": _batch_004,
    "batching-005": _batch_005,
    "batching-006": _batch_006,
    "paged-kv-001": _paged_001,
    "paged-kv-002": _paged_002,
    "paged-kv-003": _paged_003,
    "paged-kv-005": _paged_005,
    "paged-kv-007": _paged_007,
    "prefix-caching-001": _prefix_001,
    "prefix-caching-002": _prefix_002,
    "prefix-caching-003": _prefix_003,
    "prefix-caching-006": _prefix_006,
    "prefix-caching-008": _prefix_008,
    "latency-001": _lat_001,
    "latency-002": _lat_002,
    "latency-003": _lat_003,
    "latency-004": _lat_004,
    "latency-007": _lat_007,
    "latency-009": _lat_009,
    "disaggregation-002": _dis_002,
    "disaggregation-003": _dis_003,
    "disaggregation-004": _dis_004,
    "disaggregation-005": _dis_005,
    "disaggregation-008": _dis_008,
    "quantisation-001": _quant_001,
    "quantisation-002": _quant_002,
    "quantisation-003": _quant_003,
    "quantisation-006": _quant_006,
    "quantisation-007": _quant_007,
    "quantisation-009": _quant_009,
    "parallelism-001": _par_001,
    "parallelism-002": _par_002,
    "parallelism-004": _par_004,
    "parallelism-006": _par_006,
    "parallelism-008": _par_008,
    "parallelism-010": _par_010,
    "parallelism-012": _par_012,
    "metering-001": _met_001,
    "metering-002": _met_002,
    "metering-003": _met_003,
    "metering-004": _met_004,
    "metering-005": _met_005,
    "metering-007": _met_007,
    "metering-008": _met_008,
    "fleet-001": _fleet_001,
    "fleet-002": _fleet_002,
    "fleet-003": _fleet_003,
    "fleet-004": _fleet_004,
    "fleet-005": _fleet_005,
    "fleet-006": _fleet_006,
    "fleet-007": _fleet_007,
    "fleet-008": _fleet_008,
}

DRAWS_PER_QUESTION = 150


@pytest.fixture(scope="module")
def bank() -> Any:
    from questions.bank import load_bank

    return load_bank()


def _numeric_parameterised(bank: Any) -> list[Any]:
    """Numeric questions that draw fresh values (params or [[question.cases]] rows); the second
    edition's topics are re-derived in test_rederive_and_diagnose, the 2026 syllabus's questions in
    test_bank_rederive_syllabus."""
    from tests.questions.test_bank_rederive_syllabus import REDERIVE_2026, SYLLABUS_TOPICS
    from tests.questions.test_rederive_and_diagnose import NEW_TOPICS

    return [
        q for q in bank.questions if q.kind == "numeric"
        and q.topic not in {*NEW_TOPICS, *SYLLABUS_TOPICS} and q.id not in REDERIVE_2026
        and (q.params or getattr(q, "cases", ()))
    ]


@pytest.mark.slow
def test_every_parameterised_numeric_question_has_a_rederivation(bank: Any) -> None:
    ids = {q.id for q in _numeric_parameterised(bank)}
    assert sorted(ids - REDERIVE.keys()) == [], "add an independent re-derivation"
    assert sorted(REDERIVE.keys() - ids) == [], "re-derivation for a missing/changed question"


@pytest.mark.parametrize("qid", sorted(REDERIVE))
def test_answer_matches_independent_rederivation(bank: Any, qid: str) -> None:
    question = bank.get(qid)
    for seed in range(DRAWS_PER_QUESTION):
        instance = question.draw(seed)
        expected = REDERIVE[qid](instance.values)
        assert instance.answer is not None
        assert math.isfinite(instance.answer), (qid, seed, instance.values)
        assert math.isclose(instance.answer, expected, rel_tol=1e-6, abs_tol=1e-9), (
            f"{qid} seed {seed}: bank says {instance.answer!r}, re-derivation {expected!r}; "
            f"values {dict(instance.values)}"
        )


def _corners(question: Any) -> list[dict[str, Any]]:
    """Every min/max combination of the params, crossed with the first and last case row."""
    names = list(question.params)
    ends = [question.params[name].extremes() for name in names]
    cases = list(getattr(question, "cases", ())) or [{}]
    rows = [cases[0], cases[-1]]
    return [
        {**row, **dict(zip(names, combo, strict=True))}
        for row in rows
        for combo in itertools.product(*ends)
    ]


@pytest.mark.parametrize("qid", sorted(REDERIVE))
def test_answer_matches_rederivation_at_every_corner(bank: Any, qid: str) -> None:
    question = bank.get(qid)
    for drawn in _corners(question):
        instance = question.instance(drawn)
        expected = REDERIVE[qid](instance.values)
        assert math.isclose(instance.answer, expected, rel_tol=1e-6, abs_tol=1e-9), (qid, drawn)


_ANSWER_SPEC = re.compile(r"\{answer(?::([^}]*))?\}")


@pytest.mark.slow
def test_explanations_show_the_answer_within_its_tolerance(bank: Any) -> None:
    """A learner who types the answer exactly as the explanation prints it must be marked right."""
    for question in _numeric_parameterised(bank):
        specs = _ANSWER_SPEC.findall(question.explanation)
        assert specs, f"{question.id}: the explanation never shows {{answer}}"
        for seed in range(60):
            instance = question.draw(seed)
            for spec in specs:
                shown = format(instance.answer, spec).replace(",", "").rstrip("%")
                assert question.tolerance.accepts(instance.answer, float(shown)), (
                    f"{question.id} seed {seed}: shows {shown} for {instance.answer}"
                )


@pytest.mark.slow
def test_draws_vary_so_answers_cannot_be_memorised(bank: Any) -> None:
    for question in _numeric_parameterised(bank):
        answers = {round(question.draw(seed).answer, 9) for seed in range(40)}
        assert len(answers) >= 2, f"{question.id} gives the same answer on every draw"


def test_bank_meets_the_second_edition_targets(bank: Any) -> None:
    """The bank's size and mix: >= 260 questions in >= 20 topics, >= 60% parameterised,
    >= 40% numeric, every difficulty 1-5 present and >= 25 at 4-5 (so ~26 days of 10 new cards,
    not ~12)."""
    questions = list(bank.questions)
    per_topic = Counter(q.topic for q in questions)
    assert len(questions) >= 260
    assert len(per_topic) >= 20
    assert min(per_topic.values()) >= 8, per_topic
    drawn = [q for q in questions if q.params or getattr(q, "cases", ())]
    assert len(drawn) / len(questions) >= 0.60, f"parameterised share {len(drawn)}/{len(questions)}"
    numeric = [q for q in questions if q.kind != "mcq"]
    assert len(numeric) / len(questions) >= 0.40, f"numeric share {len(numeric)}/{len(questions)}"
    difficulty = Counter(q.difficulty for q in questions)
    assert set(difficulty) == {1, 2, 3, 4, 5}, difficulty
    assert difficulty[4] + difficulty[5] >= 25, difficulty


def test_mcqs_have_four_distinct_choices_and_one_key(bank: Any) -> None:
    for question in bank.questions:
        if question.kind != "mcq":
            continue
        assert len(question.choices) == 4, question.id
        assert len(set(question.choices)) == 4, question.id
        assert question.correct in range(4), question.id
