"""What kv-bytes' levels share: the dtype table, known model configs, the case builders, the
bytes-per-token formula with one deliberate mistake (the diagnoses of both levels start from it)
and the exact int comparison every case ends in."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lab.exercises import untouched
from lab.grader.api import Case, Verdict

GiB = 1 << 30
CASE_TIMEOUT_S = 5.0  # pure arithmetic: anything slower is a loop
BITS = {
    "float32": 32, "fp32": 32, "bfloat16": 16, "bf16": 16, "float16": 16, "fp16": 16,
    "half": 16, "float8_e4m3fn": 8, "float8_e5m2": 8, "fp8": 8, "int4": 4,
}

LLAMA2_7B = {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096}
LLAMA3_8B = {**LLAMA2_7B, "num_key_value_heads": 8}
LLAMA3_70B = {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
              "hidden_size": 8192}
FALCON_7B = {"num_hidden_layers": 32, "num_attention_heads": 71, "num_key_value_heads": 1,
             "hidden_size": 4544}
GEMMA_7B = {"num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
            "hidden_size": 3072, "head_dim": 256}


def size_of(config: dict[str, Any]) -> int:
    """How big a config is (used to show the smallest failing case first)."""
    layers = config.get("num_hidden_layers") or 1
    heads = config.get("num_attention_heads") or 1
    kv = config.get("num_key_value_heads") or heads
    hd = config.get("head_dim") or max(1, (config.get("hidden_size") or 1) // max(1, heads))
    try:  # invalid counts (0, negative) size as 1: an invalid case is never "smaller" than 1
        return max(1, int(layers)) * max(1, int(kv)) * max(1, int(hd))
    except (TypeError, ValueError):
        return 0


def bpt(config: dict[str, Any], dtype: str, **kw: Any) -> Case:
    return Case(
        id="", level=1, params={"function": "kv_bytes_per_token",
                                "args": {"config": config, "dtype": dtype, **kw}},
        size=size_of(config),
    )


def named(case: Case, case_id: str, description: str, level: int = 1) -> Case:
    return Case(id=case_id, level=level, params=case.params, size=case.size,
                description=description, timeout_s=CASE_TIMEOUT_S)


def capacity(function: str, config: dict[str, Any], dtype: str, **kw: Any) -> Case:
    args = {"config": config, "dtype": dtype, **kw}
    size = size_of(config) * int(kw.get("context_len", kw.get("num_seqs", 1)) or 1)
    return Case(id="", level=2, params={"function": function, "args": args}, size=size)



def random_config(rng: random.Random) -> dict[str, Any]:
    kv = rng.choice([1, 1, 2, 4, 8, 8, 16, 32])
    group = rng.choice([1, 1, 2, 4, 8])
    heads = kv * group
    head_dim = rng.choice([64, 80, 96, 112, 128, 128, 160, 256, rng.randint(1, 33)])
    config: dict[str, Any] = {"num_hidden_layers": rng.randint(1, 126),
                              "num_attention_heads": heads}
    style = rng.random()
    if style < 0.25:  # explicit head_dim that disagrees with hidden_size / heads
        config["hidden_size"] = heads * rng.choice([64, 128, 192])
        config["head_dim"] = head_dim
    else:
        config["hidden_size"] = heads * head_dim
        if rng.random() < 0.3:
            config["head_dim"] = head_dim
    if group > 1 or rng.random() < 0.6:
        config["num_key_value_heads"] = kv
    return config



def variant(args: dict[str, Any], **bug: Any) -> float | None:
    """bytes per token (per GPU) computed with one deliberate mistake; None if not computable."""
    config, dtype = args["config"], args["dtype"]
    try:
        heads = config["num_attention_heads"]
        kv = config.get("num_key_value_heads") or heads
        if bug.get("query_heads"):
            kv = heads
        hd = config.get("head_dim") or config["hidden_size"] // heads
        if bug.get("ignore_head_dim"):
            hd = config["hidden_size"] // heads
        bits = bug.get("bits") or BITS[dtype]
        tp = args.get("tensor_parallel", 1)
        if not bug.get("ignore_tp"):
            kv = kv // tp if kv >= tp else 1
        vector: float = -(-hd * bits // 8)
        if bug.get("fractional"):
            vector = hd * bits / 8
        factor = 1 if bug.get("no_kv_pair") else 2
        return float(factor * config["num_hidden_layers"] * kv * vector)
    except (KeyError, TypeError, ZeroDivisionError):
        return None



def check(case: Case, got: object, expected: object,
          diagnose: Callable[[Case, object, object], str]) -> Verdict:
    """Exact int comparison; `diagnose` (the case's level) names the rule a wrong answer
    most likely missed."""
    assert isinstance(expected, dict)
    fn = case.params["function"]
    if not isinstance(got, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if got.get("touched"):
        return Verdict(False, untouched.message(fn, list(got["touched"])))
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), "
                              f"but returned {got['value']!r}")
    want = expected["value"]
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              f"valid: expected {want!r}")
    value = got["value"]
    if isinstance(value, bool) or not isinstance(value, int):
        if value == want:
            why = "the number is right; return an int (use // rather than /)"
        else:
            why = diagnose(case, value, want)
        return Verdict(False, f"{fn} must return an int, got {type(value).__name__} {value!r} "
                              f"(expected {want!r})" + (f" — {why}" if why else ""))
    if value == want:
        return Verdict(True)
    why = diagnose(case, value, want)
    try:
        ratio = f" ({value / want:.3g}× the expected value)" if want and value else ""
        shown = f"{value:,}"
    except (OverflowError, ValueError):  # a 5000-digit int: too big to divide or to print
        ratio, shown = "", f"an int of about {value.bit_length() * 0.30103:.0f} digits"
    return Verdict(False, f"{fn}: expected {want:,}, got {shown}{ratio}"
                          + (f" — {why}" if why else ""))
