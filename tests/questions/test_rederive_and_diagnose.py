"""Second-edition topics: independent re-derivation of every numeric answer, and the diagnosis
format (mistakes, whys, rounding) checked on every draw.

Each function in REDERIVE_V2 recomputes a numeric answer from the values the prompt states,
written from the physics rather than copied from the question's TOML formula (derived values are
ignored on purpose). The format checks prove what the learner relies on: every named mistake is
graded wrong (its value lies outside the tolerance on every draw and corner), every MCQ distractor
names its misconception, and counted answers are whole numbers.

The mistakes and whys are also read straight from the TOML (the `raw` fixture), so these checks
do not depend on how the loader models them.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from questions import loader
from questions.bank import BUILTIN_DIR, builtin_files
from questions.formula import compile_formula
from questions.model import Question
from questions.validate import validate_files

pytestmark = pytest.mark.slow  # 200 draws and every corner of ~130 questions: ~30 s

V = Mapping[str, Any]
NEW_TOPICS = [
    "chunked-prefill",
    "moe",
    "attention-variants",
    "slo-goodput",
    "queueing",
    "autoscaling",
    "speculative-variants",
    "energy",
    "multi-lora",
    "long-context",
    "sampling",
]
DRAWS = 200
KIB, MIB, GIB = 1024, 2**20, 2**30


def _new_files() -> list[Path]:
    return [BUILTIN_DIR / f"{topic}.toml" for topic in NEW_TOPICS
            if (BUILTIN_DIR / f"{topic}.toml").exists()]


@pytest.fixture(scope="module")
def report() -> Any:
    others = [p for p in builtin_files() if p not in set(_new_files())]
    return validate_files(_new_files(), context=others, builtin_dir=BUILTIN_DIR)


@pytest.fixture(scope="module")
def raw() -> dict[str, dict[str, Any]]:
    """Question id -> its raw TOML table."""
    tables: dict[str, dict[str, Any]] = {}
    for path in _new_files():
        for table in tomllib.loads(path.read_text(encoding="utf-8"))["question"]:
            tables[table["id"]] = table
    return tables


def _questions(report: Any) -> list[Question]:
    """The second edition's questions (the 2026 syllabus's additions to these topics are
    re-derived in test_bank_rederive_syllabus)."""
    from tests.questions.test_bank_rederive_syllabus import REDERIVE_2026, THIN_MCQS

    return [q for q in report.questions if q.id not in REDERIVE_2026.keys() | THIN_MCQS]


def _instances(question: Question) -> Iterator[Any]:
    """Every corner of the parameter box for every case row, then seeded draws."""
    names = list(question.params)
    ends = [question.params[n].extremes() for n in names]
    for row in question.cases or ({},):
        for combo in itertools.product(*ends):
            yield question.instance({**row, **dict(zip(names, combo, strict=True))})
    for seed in range(DRAWS if question.parameterised else 1):
        yield question.draw(seed, redraws=0)


# ---------------------------------------------------------------- independent re-derivations

REDERIVE_V2: dict[str, Callable[[V], float]] = {}


def rederives(qid: str) -> Callable[[Callable[[V], float]], Callable[[V], float]]:
    def register(fn: Callable[[V], float]) -> Callable[[V], float]:
        assert qid not in REDERIVE_V2, qid
        REDERIVE_V2[qid] = fn
        return fn
    return register


# chunked-prefill --------------------------------------------------------------------------

GPU_BF16 = {  # name: (dense BF16 TFLOP/s, TB/s), datasheet figures typed in again
    "A100 40GB SXM": (312, 1.555), "A100 80GB SXM": (312, 2.039), "H100 PCIe": (756, 2.0),
    "H100 SXM": (989, 3.35), "H100 NVL": (835, 3.9), "H200 SXM": (989, 4.8),
    "B200 (HGX)": (2250, 8.0), "L40S (PCIe)": (362, 0.864), "L4": (121, 0.3),
    "MI300X": (1307, 5.3),
}
DENSE_PARAMS_B = {  # model: billions of parameters (model cards)
    "Llama-2-7B": 6.74, "Mistral-7B v0.1": 7.24, "Llama-3-8B": 8.03, "Llama-2-13B": 13.02,
    "Qwen2.5-7B": 7.62, "Qwen2.5-14B": 14.77, "Gemma-2-9B": 9.24, "Phi-3-medium (14B)": 13.96,
}
SHAPES = {  # model: (layers, KV heads, head_dim)
    "Llama-2-7B": (32, 32, 128), "Llama-2-13B": (40, 40, 128), "Llama-3-8B": (32, 8, 128),
    "Llama-3-70B": (80, 8, 128), "Mistral-7B v0.1": (32, 8, 128), "Qwen2.5-72B": (80, 8, 128),
    "Llama-3.1-405B": (126, 8, 128), "Qwen2.5-7B": (28, 4, 128),
}
PEAK_BY_LABEL = {"A100 80GB SXM": 312e12, "H100 SXM": 989e12, "B200": 2250e12}


def _params(v: V) -> float:
    assert v["params_b"] == DENSE_PARAMS_B[v["model"]], "case row disagrees with the model card"
    return v["params_b"] * 1e9


@rederives("chunked-prefill-001")
def _cp1(v: V) -> float:
    remaining, steps = v["k"] * v["budget"], 0
    while remaining > 0:  # simulate the iterations
        remaining -= v["budget"] - v["decodes"]
        steps += 1
    return steps


@rederives("chunked-prefill-002")
def _cp2(v: V) -> float:
    peak = PEAK_BY_LABEL[v["gpu_name"]]
    assert peak == v["peak"] * 1e12
    return 1000 * (2 * _params(v) * v["prompt_len"]) / (peak * v["mfu"])


@rederives("chunked-prefill-003")
def _cp3(v: V) -> float:
    peak, bw = GPU_BF16[v["gpu"]]
    assert (v["peak"], v["bw"]) == (peak, bw)
    # T tokens: 2·N·T FLOPs over 2·N bytes; equal to the ridge peak/bw
    return (peak * 1e12) / (bw * 1e12)


@rederives("chunked-prefill-004")
def _cp4(v: V) -> float:
    per_token_s = 2 * _params(v) / (989e12 * v["mfu"])
    budget = 0
    while (budget + 1) * per_token_s <= v["slo"] / 1000 * (1 + 1e-12):
        budget += 1
    return budget


@rederives("chunked-prefill-005")
def _cp5(v: V) -> float:
    prompt = v["k"] * v["budget"]
    iteration_s = 2 * 8.03e9 * v["budget"] / (989e12 * v["mfu"])
    done, t = 0, 0.0
    while done < prompt:
        done += v["budget"] - v["decodes"]
        t += iteration_s
    return t * 1000


@rederives("chunked-prefill-006")
def _cp6(v: V) -> float:
    layers, kv_heads, head_dim = SHAPES[v["model"]]
    assert (v["layers"], v["kv_heads"], v["head_dim"]) == (layers, kv_heads, head_dim)
    per_token = 2 * layers * kv_heads * head_dim * 2
    reads = sum(i * v["chunk"] for i in range(v["n"]))
    return reads * per_token / GIB


# moe ---------------------------------------------------------------------------------------

MOE = {  # model: (total B params, active B params), model cards / papers
    "Mixtral-8x7B": (46.7, 12.9), "Mixtral-8x22B": (141, 39), "DBRX": (132, 36),
    "DeepSeek-V2": (236, 21), "DeepSeek-V3": (671, 37), "Qwen3-235B-A22B": (235, 22),
    "Qwen3-30B-A3B": (30.5, 3.3), "Llama-4-Scout": (109, 17), "Llama-4-Maverick": (400, 17),
    "gpt-oss-120b": (117, 5.1),
}
MOE_SHAPE = {  # model: (hidden, MoE layers, experts per token), config.json
    "Mixtral-8x7B": (4096, 32, 2), "Mixtral-8x22B": (6144, 56, 2), "DBRX": (6144, 40, 4),
    "DeepSeek-V2": (5120, 59, 6), "DeepSeek-V3": (7168, 58, 8),
    "Qwen3-235B-A22B": (4096, 94, 8), "Qwen3-30B-A3B": (2048, 48, 8),
    "OLMoE-1B-7B": (2048, 16, 8), "gpt-oss-120b": (2880, 36, 4),
}


def _moe(v: V) -> tuple[float, float]:
    total, active = MOE[v["model"]]
    assert (v["total_b"], v["active_b"]) == (total, active), "case row disagrees with the card"
    return total * 1e9, active * 1e9


@rederives("moe-001")
def _moe1(v: V) -> float:
    return _moe(v)[0] * v["bytes"] / 1e9


@rederives("moe-002")
def _moe2(v: V) -> float:
    return 2 * _moe(v)[1] / 1e9


@rederives("moe-003")
def _moe3(v: V) -> float:
    # expectation by linearity: sum over experts of P(at least one token picks it)
    e, k, b = v["experts"], v["k"], v["batch"]
    assert b == max(1, round(v["load"] * e / k))
    p_picked_by_one = math.comb(e - 1, k - 1) / math.comb(e, k)  # = k / e
    return sum(1 - (1 - p_picked_by_one) ** b for _ in range(e))


@rederives("moe-004")
def _moe4(v: V) -> float:
    per_expert_layer = 3 * 4096 * 14336  # gate, up, down projections
    experts_total = 32 * 8 * per_expert_layer
    assert abs(experts_total / 1e9 - 45.10) < 0.005
    read = 1 - (1 - 2 / 8) ** v["batch"]
    return 2 * (1.61e9 + 45.10e9 * read) / 1e9


@rederives("moe-005")
def _moe5(v: V) -> float:
    hidden, layers, k = MOE_SHAPE[v["model"]]
    assert (v["hidden"], v["moe_layers"], v["k"]) == (hidden, layers, k)
    copies = v["batch"] * layers * k
    remote_copies = copies * (v["ep"] - 1) / v["ep"]
    return remote_copies * hidden * v["bytes"] * 2 / 1e6  # there and back


@rederives("moe-006")
def _moe6(v: V) -> float:
    return _moe(v)[1] * 1 / (8 * 4.8e12) * 1000


@rederives("moe-007")
def _moe7(v: V) -> float:
    e, g, hot = v["experts"], v["gpus"], v["hot_pct"] / 100
    loads = [0.0] * g
    for expert in range(e):
        share = hot if expert == 0 else (1 - hot) / (e - 1)
        loads[expert // (e // g)] += share
    return max(loads) / (sum(loads) / g)


# attention-variants ----------------------------------------------------------------------

MLA_LAYERS = {"DeepSeek-V2": 60, "DeepSeek-V2-Lite": 27, "DeepSeek-V3": 61, "Kimi-K2": 61}
HYBRID = {  # model: (layers, local-layer pattern, window, KV heads, head_dim), config.json
    "Gemma-2-2B": (26, "alternate", 4096, 4, 256),
    "Gemma-2-9B": (42, "alternate", 4096, 8, 256),
    "Gemma-2-27B": (46, "alternate", 4096, 16, 128),
    "Gemma-3-4B": (34, "5:1", 1024, 4, 256),
    "Gemma-3-12B": (48, "5:1", 1024, 8, 256),
    "Gemma-3-27B": (62, "5:1", 1024, 16, 128),
}
Q_HEADS = {  # model: (query heads, KV heads)
    "Qwen2.5-14B": (40, 8), "Mixtral-8x7B": (32, 8), "Llama-3-8B": (32, 8),
    "Llama-3-70B": (64, 8), "Llama-3.1-405B": (128, 8), "Mistral-7B v0.1": (32, 8),
    "Qwen2.5-72B": (64, 8), "Qwen2.5-7B": (28, 4),
}


@rederives("attention-variants-001")
def _av1(v: V) -> float:
    assert v["q_heads"] % v["kv_heads"] == 0
    k_bytes = v["layers"] * v["kv_heads"] * v["head_dim"] * 2
    return (k_bytes + k_bytes) / KIB


@rederives("attention-variants-002")
def _av2(v: V) -> float:
    assert v["layers"] == MLA_LAYERS[v["model"]]
    return v["layers"] * (512 + 64) * v["bytes"] / KIB


@rederives("attention-variants-003")
def _av3(v: V) -> float:
    return v["heads"] * 192 / 576 + v["heads"] * 128 / 576


@rederives("attention-variants-004")
def _av4(v: V) -> float:
    return min(v["ctx"], v["window"]) * 128 * KIB / MIB


@rederives("attention-variants-005")
def _av5(v: V) -> float:
    layers, pattern, window, kv_heads, head_dim = HYBRID[v["model"]]
    if pattern == "alternate":
        local = [i % 2 == 0 for i in range(layers)]  # local, global, local, ...
    else:
        local = [(i + 1) % 6 != 0 for i in range(layers)]  # every sixth layer is global
    assert (v["local_layers"], v["global_layers"]) == (sum(local), layers - sum(local))
    assert (v["window"], v["kv_heads"], v["head_dim"]) == (window, kv_heads, head_dim)
    per_layer_token = 2 * kv_heads * head_dim * 2
    total = sum(per_layer_token * (min(v["ctx"], window) if is_local else v["ctx"])
                for is_local in local)
    return total / MIB


@rederives("attention-variants-006")
def _av6(v: V) -> float:
    q_heads, kv_heads = Q_HEADS[v["model"]]
    assert (v["q_heads"], v["kv_heads"]) == (q_heads, kv_heads)
    return q_heads * v["ctx"] ** 2 * 2 / GIB


@rederives("attention-variants-007")
def _av7(v: V) -> float:
    splits = 1
    while splits * v["batch"] * v["heads"] < v["sms"]:
        splits += 1
    return splits


@rederives("attention-variants-008")
def _av8(v: V) -> float:
    kv_token = 2 * 32 * 8 * 128 * 2
    return 8.03e9 * 2 / (v["batch"] * kv_token)


# slo-goodput -------------------------------------------------------------------------------


@rederives("slo-goodput-001")
def _slo1(v: V) -> float:
    ttft = set(range(v["ttft_miss"]))  # label requests; the overlap is the first `both` ids
    tpot = set(range(v["ttft_miss"] - v["both"], v["ttft_miss"] - v["both"] + v["tpot_miss"]))
    assert len(ttft & tpot) == v["both"]
    return v["n"] - len(ttft | tpot)


@rederives("slo-goodput-002")
def _slo2(v: V) -> float:
    return 1 - math.exp(v["n"] * math.log(v["p"]))


@rederives("slo-goodput-003")
def _slo3(v: V) -> float:
    return 1 - math.exp(math.log(v["page_pct"] / 100) / v["n"])


def _max_batch(a: float, b: float, s: float) -> int:
    batch = 0
    while a + b * (batch + 1) <= s + 1e-9:
        batch += 1
    return batch


@rederives("slo-goodput-004")
def _slo4(v: V) -> float:
    return _max_batch(v["a"], v["b"], v["s"])


@rederives("slo-goodput-005")
def _slo5(v: V) -> float:
    batch = _max_batch(v["a"], v["b"], v["s"])
    return batch / ((v["a"] + v["b"] * batch) / 1000)


@rederives("slo-goodput-006")
def _slo6(v: V) -> float:
    requests = 1000.0
    good = requests * (1 - v["miss_pct"] / 100) * v["short_out"]
    bad = requests * v["miss_pct"] / 100 * v["long_out"]
    return v["tput"] * good / (good + bad)


@rederives("slo-goodput-007")
def _slo7(v: V) -> float:
    return -v["mean"] * math.log(1 - v["pct"] / 100)


# queueing ----------------------------------------------------------------------------------


def _erlang_c(servers: int, offered: float) -> float:
    """Probability of waiting in M/M/c, from the birth-death stationary distribution."""
    terms = [offered**k / math.factorial(k) for k in range(servers)]
    tail = offered**servers / math.factorial(servers) * servers / (servers - offered)
    return tail / (sum(terms) + tail)


@rederives("queueing-001")
def _q1(v: V) -> float:
    mu = 1000 / v["s"]
    lam = v["rho"] * mu
    in_system = sum(n * (1 - v["rho"]) * v["rho"] ** n for n in range(20000))
    return in_system / lam * 1000  # Little's law: W = L / λ


@rederives("queueing-002")
def _q2(v: V) -> float:
    def wait(rho: float, s: float = 1.0) -> float:  # Pollaczek-Khinchine, exponential service
        return (rho / s) * (2 * s * s) / (2 * (1 - rho))
    return wait(v["r2"]) / wait(v["r1"])


@rederives("queueing-003")
def _q3(v: V) -> float:
    return v["rho"] / (1 - v["rho"]) * (1 + v["cs"] ** 2) / 2 * v["s"]


@rederives("queueing-004")
def _q4(v: V) -> float:
    mu, target = 1000 / v["s"], v["s"] * v["ratio"] / 1000
    lo, hi = 0.0, mu
    for _ in range(200):  # bisection on W(λ) = 1 / (μ − λ) = target
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 / (mu - mid) <= target else (lo, mid)
    return lo


@rederives("queueing-005")
def _q5(v: V) -> float:
    mu = 1000 / v["s"]
    lam = 2 * v["rho"] * mu
    return _erlang_c(2, lam / mu) / (2 * mu - lam) * 1000


@rederives("queueing-006")
def _q6(v: V) -> float:
    return sum(n * (1 - v["rho"]) * v["rho"] ** n for n in range(20000))


@rederives("queueing-007")
def _q7(v: V) -> float:
    tokens, admitted = float(v["b"]), 0
    for _ in range(v["t"]):  # greedy client: spend everything, then refill for a second
        admitted += int(tokens)
        tokens -= int(tokens)
        tokens += v["r"]
    return admitted + int(tokens)  # what refilled in the last second is spendable at its end


@rederives("queueing-008")
def _q8(v: V) -> float:
    charge, sent = v["prompt_toks"] + v["max_toks"], 0
    while (sent + 1) * charge <= v["tpm"]:
        sent += 1
    return sent


# speculative-variants ----------------------------------------------------------------------


def _chain_tokens(acceptances: list[float]) -> float:
    """Expected tokens per pass: the target's own token plus each position reached."""
    total, reach = 1.0, 1.0
    for a in acceptances:
        reach *= a
        total += reach
    return total


@rederives("speculative-variants-001")
def _sv1(v: V) -> float:
    return _chain_tokens([v["a1"], v["a2"], v["a3"]])


@rederives("speculative-variants-002")
def _sv2(v: V) -> float:
    return v["tau"] / (1 + v["over_pct"] / 100)


@rederives("speculative-variants-003")
def _sv3(v: V) -> float:
    return _chain_tokens([v["p_pct"] / 100]) / (1 + v["over_pct"] / 100)


@rederives("speculative-variants-004")
def _sv4(v: V) -> float:
    hit = v["hit_pct"] / 100
    return hit * _chain_tokens([v["alpha"]] * v["k"]) + (1 - hit) * 1


@rederives("speculative-variants-005")
def _sv5(v: V) -> float:
    # enumerate the outcomes of the first position: branch 1, branch 2, or neither
    below = _chain_tokens([v["alpha"]] * v["rest"])  # first token + the chain under it
    return 1 + v["p1"] * below + v["p2"] * below


@rederives("speculative-variants-006")
def _sv6(v: V) -> float:
    tau = round(1 + v["frac"] * v["gamma"], 2)
    assert tau == v["tau"]
    return tau / (v["gamma"] + 1)


# autoscaling -------------------------------------------------------------------------------

LOAD_PARAMS_B = {
    "Llama-3-8B": 8.03, "Mistral-7B v0.1": 7.24, "Llama-2-13B": 13.02, "Qwen2.5-32B": 32.76,
    "Mixtral-8x7B": 46.7, "Llama-3-70B": 70.55, "Qwen2.5-72B": 72.71, "Llama-3.1-405B": 405.85,
}


def _weight_bytes(v: V) -> float:
    assert v["params_b"] == LOAD_PARAMS_B[v["model"]]
    return v["params_b"] * 1e9 * v["bytes"]


@rederives("autoscaling-001")
def _as1(v: V) -> float:
    return _weight_bytes(v) / (v["disk"] * 1e9)


@rederives("autoscaling-002")
def _as2(v: V) -> float:
    bits = _weight_bytes(v) * 8
    return bits / (v["nic"] * 1e9)


@rederives("autoscaling-003")
def _as3(v: V) -> float:
    shard = v["weights_gb"] / 8
    per_gpu_rate = min(v["pcie"], v["store"] / 8)  # eight readers share the storage equally
    return shard / per_gpu_rate


@rederives("autoscaling-004")
def _as4(v: V) -> float:
    return sum([v["provision"], v["pull"], v["weights_gb"] / v["rate"], v["warm"]])


@rederives("autoscaling-005")
def _as5(v: V) -> float:
    replicas = 0
    while replicas * v["per"] < v["ramp"] * v["cold"]:
        replicas += 1
    return replicas


@rederives("autoscaling-006")
def _as6(v: V) -> float:
    capacity = v["n"] * v["per"]
    return (capacity - v["ramp"] * v["cold"]) / capacity


@rederives("autoscaling-007")
def _as7(v: V) -> float:
    return math.exp(-v["lam"] * v["tau"] / 60)


@rederives("autoscaling-012")
def _as12(v: V) -> float:
    return v["k"] * v["g"] * 24 * 365 / 12 * v["rate"]


# energy ------------------------------------------------------------------------------------

BOARD_POWER_W = {"H100 SXM": 700, "H200 SXM": 700, "A100 SXM": 400, "B200": 1000, "L40S": 350,
                 "MI300X": 750, "H100 PCIe": 350, "L4": 72}
JOULES_PER_KWH = 3.6e6


@rederives("energy-001")
def _en1(v: V) -> float:
    joules = v["kw"] * 1000 * (1e6 / v["tps"])
    return joules / JOULES_PER_KWH


@rederives("energy-002")
def _en2(v: V) -> float:
    return v["kwh_m"] * v["pue"] * v["price"]


@rederives("energy-003")
def _en3(v: V) -> float:
    assert v["tdp"] == BOARD_POWER_W[v["gpu"]]
    joules = v["n"] * v["tdp"] * v["load"] / 100 * 730 * 3600
    return joules / JOULES_PER_KWH / 1000


@rederives("energy-004")
def _en4(v: V) -> float:
    def per_token(batch: int) -> float:
        return (v["a"] + v["b"] * batch) / batch
    return per_token(v["b1"]) / per_token(v["b2"])


@rederives("energy-005")
def _en5(v: V) -> float:
    joules_per_token = v["watts"] / v["tps"]
    return JOULES_PER_KWH / joules_per_token


@rederives("energy-006")
def _en6(v: V) -> float:
    h100 = 1.0 / v["p_old"]  # tokens per joule, per unit of H100 throughput
    b200 = v["speed"] / v["p_new"]
    return b200 / h100


@rederives("energy-007")
def _en7(v: V) -> float:
    p2 = round(v["p1"] * v["p2_frac"])
    return (p2 / (1 - v["drop"] / 100)) / v["p1"]


@rederives("energy-008")
def _en8(v: V) -> float:
    it_watts = v["mw"] * 1e6 / v["pue"]
    servers = int(it_watts // (v["node_kw"] * 1000 * (1 - 1e-12)))
    while servers * v["node_kw"] * 1000 > it_watts:
        servers -= 1
    return 8 * servers


# multi-lora --------------------------------------------------------------------------------


def _lora_params(rank: int, shapes: list[tuple[int, int]]) -> int:
    """A (rank x d_in) plus B (d_out x rank) for every adapted matrix."""
    return sum(rank * d_in + d_out * rank for d_in, d_out in shapes)


@rederives("multi-lora-001")
def _ml1(v: V) -> float:
    return _lora_params(v["r"], [(v["d_in"], v["d_out"])])


@rederives("multi-lora-002")
def _ml2(v: V) -> float:
    hidden, kv_width = 4096, 8 * 128
    per_layer = [(hidden, hidden), (hidden, kv_width), (hidden, kv_width), (hidden, hidden)]
    return _lora_params(v["r"], per_layer * 32) * 2 / 1e6


@rederives("multi-lora-003")
def _ml3(v: V) -> float:
    return (v["budget"] * GIB) // (v["size"] * 1e6)


@rederives("multi-lora-004")
def _ml4(v: V) -> float:
    full_copies = v["n"] * v["w_gb"]
    shared = v["w_gb"] + v["n"] * v["a_mb"] / 1000
    return full_copies / shared


@rederives("multi-lora-005")
def _ml5(v: V) -> float:
    return v["params_m"] * 1e6 * 2 / (v["pcie"] * 1e9) * 1000


@rederives("multi-lora-006")
def _ml6(v: V) -> float:
    return v["slots"] * v["r_max"] * v["per_rank"] * 2 / GIB


# long-context ------------------------------------------------------------------------------

LONG = {  # model: (params B, layers, KV heads, query heads x head_dim), config.json / cards
    "Llama-3.1-8B": (8.03, 32, 8, 4096), "Llama-3.1-70B": (70.55, 80, 8, 8192),
    "Llama-3.1-405B": (405.85, 126, 8, 16384), "Qwen2.5-7B": (7.62, 28, 4, 3584),
    "Qwen2.5-14B": (14.77, 48, 8, 5120), "Qwen2.5-32B": (32.76, 64, 8, 5120),
    "Qwen2.5-72B": (72.71, 80, 8, 8192), "Mistral-Nemo-12B": (12.25, 40, 8, 4096),
}


def _long_kv_token(model: str) -> int:
    _, layers, kv_heads, _ = LONG[model]
    return 2 * layers * kv_heads * 128 * 2


def _prefill_flops(params: float, layers: int, width: int, tokens: float) -> float:
    causal_pairs = tokens * tokens / 2  # query-key pairs under the causal mask (≈ T²/2)
    attention = layers * causal_pairs * width * 2 * 2  # QKᵀ and AV, 2 FLOPs per MAC
    return 2 * params * tokens + attention


@rederives("long-context-001")
def _lc1(v: V) -> float:
    assert (v["layers"], v["kv_heads"]) == LONG[v["model"]][1:3]
    per_seq = _long_kv_token(v["model"]) * 131072
    return v["budget"] * GIB // per_seq


@rederives("long-context-002")
def _lc2(v: V) -> float:
    params, layers, _, width = LONG[v["model"]]
    assert (v["params_b"], v["layers"], v["d_attn"]) == (params, layers, width)
    return _prefill_flops(params * 1e9, layers, width, v["ctx"]) / 1e15


@rederives("long-context-003")
def _lc3(v: V) -> float:
    flops = _prefill_flops(8.03e9, 32, 4096, v["ctx"])
    return flops / v["n"] / (989e12 * v["mfu"])


@rederives("long-context-004")
def _lc4(v: V) -> float:
    kv = v["batch"] * v["ctx"] * _long_kv_token("Llama-3.1-8B")
    return (16.06e9 + kv) / 4.8e12 * 1000


@rederives("long-context-005")
def _lc5(v: V) -> float:
    kv = v["ctx"] * _long_kv_token("Llama-3.1-8B")
    host = kv * v["off_pct"] / 100
    return ((16.06e9 + kv - host) / 3.35e12 + host / (v["pcie"] * 1e9)) * 1000


@rederives("long-context-006")
def _lc6(v: V) -> float:
    per_token = _long_kv_token(v["model"])
    assert per_token == v["per_tok_kib"] * KIB
    held = v["ctx"] // v["n"]
    return (v["ctx"] - held) * per_token / 1e9


# sampling ----------------------------------------------------------------------------------

VOCAB = {"Llama-2-7B": 32000, "Llama-3-8B": 128256, "Qwen2.5-7B": 152064, "Gemma-2-9B": 256000,
         "Mistral-Nemo-12B": 131072, "DeepSeek-V3": 129280, "Mistral-7B v0.1": 32000,
         "Phi-3-mini": 32064}


def _softmax(logits: list[float], temperature: float) -> list[float]:
    top = max(logits)
    weights = [math.exp((z - top) / temperature) for z in logits]
    return [w / sum(weights) for w in weights]


@rederives("sampling-001")
def _sa1(v: V) -> float:
    p = _softmax([v["delta"], 0.0], v["temp"])
    return p[0] / p[1]


@rederives("sampling-002")
def _sa2(v: V) -> float:
    return _softmax([v["z1"], v["z2"], v["z3"]], v["temp"])[0]


@rederives("sampling-003")
def _sa3(v: V) -> float:
    probs = [v["p1"], v["p2"], v["p3"], v["p4"]]
    return probs[0] / sum(sorted(probs, reverse=True)[: v["k"]])


@rederives("sampling-004")
def _sa4(v: V) -> float:
    total = 0.0
    for count, p in enumerate([v[f"p{i}"] for i in range(1, 7)], start=1):
        total += p
        if total >= v["top_p"] - 1e-9:
            return count
    raise AssertionError("nucleus larger than the listed tokens")


@rederives("sampling-005")
def _sa5(v: V) -> float:
    assert v["vocab"] == VOCAB[v["model"]]
    return v["batch"] * v["vocab"] * 4 / 1e6


@rederives("sampling-006")
def _sa6(v: V) -> float:
    mask_ms = v["batch"] * v["mask_us"] / 1000
    return mask_ms if mask_ms > v["step_ms"] else v["step_ms"]


@rederives("sampling-007")
def _sa7(v: V) -> float:
    brace = round((1 - v["p_bad"]) * v["brace_share"], 2)
    whitespace = round(1 - v["p_bad"] - brace, 2)
    return brace / (brace + whitespace)


# second batch: one more numeric question per topic ------------------------------------------


@rederives("chunked-prefill-013")
def _cp13(v: V) -> float:
    iterations_per_s = 1000 / v["step"]
    return iterations_per_s * (v["budget"] - v["decodes"]) / v["prompt_len"]


@rederives("moe-013")
def _moe13(v: V) -> float:
    shards = [v["shared_b"] + v["expert_b"] / v["ep"] for _ in range(v["ep"])]
    assert math.isclose(sum(shards), v["shared_b"] * v["ep"] + v["expert_b"])
    return shards[0]


@rederives("moe-014")
def _moe14(v: V) -> float:
    tokens_per_expert_per_token = v["k"] / v["experts"]
    return v["ridge"] / tokens_per_expert_per_token


@rederives("attention-variants-014")
def _av14(v: V) -> float:
    d, t = 128, 1000  # cancel out; any values do
    flops = v["q_heads"] * (2 * d * t + 2 * d * t)
    kv_bytes = v["kv_heads"] * 2 * d * t * v["bytes"]
    return flops / kv_bytes


@rederives("slo-goodput-013")
def _slo13(v: V) -> float:
    return (v["a_pct"] / 100) * (v["b_pct"] / 100)


@rederives("queueing-013")
def _q13(v: V) -> float:
    seconds = (v["ttft"] + (v["n_out"] - 1) * v["tpot"]) / 1000
    return v["lam"] * seconds * v["ctx"] * v["kv_kib"] * KIB / GIB


@rederives("queueing-014")
def _q14(v: V) -> float:
    attempts = sum(v["p"] ** i for i in range(400))  # 1 + p + p² + …
    return v["lam"] * attempts * v["s"] / 1000


@rederives("speculative-variants-013")
def _sv13(v: V) -> float:
    return v["tau"] / (1 + v["depth"] * v["c_pct"] / 100)


@rederives("energy-013")
def _en13(v: V) -> float:
    step_s = (v["a"] + v["b"] * v["batch"]) / 1000
    joules_per_token = v["watts"] * step_s / v["batch"]
    return joules_per_token * 1e6 / JOULES_PER_KWH


@rederives("long-context-013")
def _lc13(v: V) -> float:
    params, layers, _, width = LONG[v["model"]]
    assert (v["params_b"], v["layers"], v["d_attn"]) == (params, layers, width)
    lo, hi = 1.0, 1e7  # bisection on linear(T) = attention(T)
    for _ in range(200):
        mid = (lo + hi) / 2
        linear = 2 * params * 1e9 * mid
        attention = _prefill_flops(params * 1e9, layers, width, mid) - linear
        lo, hi = (mid, hi) if attention < linear else (lo, mid)
    return lo


@rederives("sampling-013")
def _sa13(v: V) -> float:
    assert v["vocab"] == {**VOCAB, "gpt-oss-120b": 201088}[v["model"]]
    return v["batch"] * math.ceil(v["vocab"] / 8) / 1000


@rederives("autoscaling-014")
def _as14(v: V) -> float:
    per_night_gpu_hours = v["g"] * v["idle_h"] - v["g"] * v["wakes"] * (v["cold"] + v["stay"]) / 60
    return 30 * per_night_gpu_hours * v["rate"]


@rederives("multi-lora-014")
def _ml14(v: V) -> float:
    return (v["lora_gib"] * GIB) // 131072


@rederives("long-context-014")
def _lc14(v: V) -> float:
    copy_s = v["ctx"] * _long_kv_token("Llama-3.1-8B") / (v["pcie"] * 1e9)
    recompute_s = _prefill_flops(8.03e9, 32, 4096, v["ctx"]) / (989e12 * v["mfu"])
    return recompute_s / copy_s


@rederives("sampling-014")
def _sa14(v: V) -> float:
    kept = sorted([v["z1"], v["z2"], v["z3"]], reverse=True)[:2]
    return _softmax(kept, v["temp"])[0]


@rederives("sampling-015")
def _sa15(v: V) -> float:
    # what FP32 itself does: a softmax in float32, and top-p at 1.0 cuts exactly the zeros
    import numpy as np

    logits = np.array([0.0, v["a"], v["b"], v["c"]], dtype=np.float32)
    e = np.exp(logits - logits.max())
    return float(np.count_nonzero(e / e.sum(dtype=np.float32)))


@rederives("sampling-016")
def _sa16(v: V) -> float:
    return v["calls"] * v["batch"] * v["vocab"] * 4 / 1024 ** 2


# ---------------------------------------------------------------- tests


def test_new_topics_validate(report: Any) -> None:
    assert [str(p) for p in report.problems] == []
    assert {q.topic for q in report.questions} == set(NEW_TOPICS) & {
        p.stem for p in _new_files()}


def test_every_numeric_question_has_a_rederivation(report: Any) -> None:
    ids = {q.id for q in _questions(report) if q.kind == "numeric"}
    assert sorted(ids - REDERIVE_V2.keys()) == [], "add an independent re-derivation"
    assert sorted(REDERIVE_V2.keys() - ids) == [], "re-derivation for a missing question"


def test_answers_match_independent_rederivation(report: Any) -> None:
    for question in _questions(report):
        if question.kind != "numeric":
            continue
        for inst in _instances(question):
            expected = REDERIVE_V2[question.id](inst.values)
            assert inst.answer is not None and math.isfinite(inst.answer)
            assert math.isclose(inst.answer, expected, rel_tol=1e-6, abs_tol=1e-9), (
                f"{question.id}: bank {inst.answer!r}, re-derived {expected!r}, "
                f"values {dict(inst.values)}")


def test_every_named_mistake_is_graded_wrong(report: Any, raw: dict[str, Any]) -> None:
    for question in _questions(report):
        table = raw[question.id]
        if question.kind != "numeric":
            assert "mistake" not in table, question.id
            continue
        mistakes = table.get("mistake", [])
        assert mistakes, f"{question.id}: a numeric question names >= 1 mistake"
        ids = [m["id"] for m in mistakes]
        assert len(set(ids)) == len(ids), question.id
        assert question.tolerance is not None
        for m in mistakes:
            assert set(m) == {"id", "formula", "says"}, (question.id, m)
            assert loader.ID_PATTERN.match(m["id"]) and m["says"].strip(), (question.id, m)
            formula = compile_formula(m["formula"])
            for inst in _instances(question):
                assert inst.answer is not None
                value = formula.evaluate(inst.values)
                assert not question.tolerance.accepts(inst.answer, value), (
                    f"{question.id} mistake {m['id']}: {value!r} is accepted for "
                    f"{inst.answer!r} ({dict(inst.values)})")


def test_every_distractor_names_its_misconception(report: Any, raw: dict[str, Any]) -> None:
    for question in _questions(report):
        why = raw[question.id].get("why")
        if question.kind != "mcq":
            assert why is None, question.id
            continue
        assert isinstance(why, list) and len(why) == len(question.choices), question.id
        for i, text in enumerate(why):
            assert (text == "") == (i == question.correct), (question.id, i)


def test_counted_answers_are_whole_numbers(report: Any, raw: dict[str, Any]) -> None:
    for question in _questions(report):
        rounding = raw[question.id].get("round")
        if rounding is None:
            continue
        assert question.kind == "numeric" and rounding in ("up", "down", "nearest")
        for inst in _instances(question):
            assert inst.answer is not None and float(inst.answer).is_integer(), (
                question.id, inst.answer)


def test_new_topics_have_ten_questions_each_mostly_parameterised_with_worked_notes(
        report: Any) -> None:
    questions = _questions(report)
    by_topic: dict[str, int] = {}
    for q in questions:
        by_topic[q.topic] = by_topic.get(q.topic, 0) + 1
    assert min(by_topic.values()) >= 10, by_topic
    assert sum(q.parameterised for q in questions) >= 0.6 * len(questions)
    assert sum(q.kind == "numeric" for q in questions) >= 0.4 * len(questions)
    assert {q.difficulty for q in questions} == {1, 2, 3, 4, 5}
    for topic in {q.topic for q in questions}:
        note = report.topics[topic].note
        assert "Worked example" in note, f"{topic}: the concept note needs a worked example"


def test_explanations_show_the_answer_within_its_tolerance(report: Any) -> None:
    """A learner who types the answer as the explanation prints it must be marked right."""
    for question in _questions(report):
        if question.kind != "numeric":
            continue
        specs = re.findall(r"\{answer(?::([^}]*))?\}", question.explanation)
        assert specs, f"{question.id}: the explanation never shows {{answer}}"
        assert question.tolerance is not None
        for inst in itertools.islice(_instances(question), 80):
            for spec in specs:
                assert not spec.endswith("%"), f"{question.id}: use a unit, not a % spec"
                shown = float(format(inst.answer, spec).replace(",", ""))
                assert question.tolerance.accepts(inst.answer, shown), (question.id, shown)


def test_draws_vary_so_answers_cannot_be_memorised(report: Any) -> None:
    for question in _questions(report):
        if question.kind == "numeric" and question.parameterised:
            answers = {round(question.draw(seed).answer, 9) for seed in range(40)}
            assert len(answers) >= 3, f"{question.id} repeats its answer too often"
