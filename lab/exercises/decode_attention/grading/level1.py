"""Level 1 — a row softmax kernel.

Boundaries: a width that is not a power of two (1000: masked lanes must load -inf, and the rows'
values sit below 0 so padding loaded as 0 would win the max), a row of width 1, exactly a power
of two (128), rows holding -inf entries (one from its 6th column on, one only in its last),
logits up to ±600 (exp overflows fp32 past 88.7 without the max subtracted), fp16 input over
3000 columns (fp32 arithmetic, stored as fp16), a strided view (row stride 33 for width 20),
bf16 (graded on CUDA; under the interpreter refused with the
reason), and a hidden seeded case.
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.decode_attention import inputs
from lab.exercises.decode_attention.grading.common import answered, check_tensor
from lab.grader.api import Case, Verdict


def _case(cid: str, description: str, *, rows: int, width: int, seed: int,
          dtype: str = "float32", report: bool = False, **extra: Any) -> Case:
    params = {"kind": "softmax", "seed": seed, "rows": rows, "width": width, "dtype": dtype,
              **extra}
    return Case(id=cid, level=1, params=params, size=rows * max(width, 64),
                description=description, timeout_s=20.0, report=report)


def cases(seed: int) -> list[Case]:
    rng = random.Random(f"decode-attention/1/{seed}")
    width = rng.randint(2, 1500)
    return [
        _case("width-1000", "width 1000, not a power of two: lanes past it masked; every value "
              "below 0", rows=4, width=1000, seed=101, shift=-6.0),
        _case("width-1", "rows of width 1 (each softmax is 1.0)", rows=3, width=1, seed=102),
        _case("width-power-of-two", "width 128: exactly one block, no masked lane", rows=2,
              width=128, seed=103),
        _case("neg-inf-entries", "rows holding -inf (masked positions get probability 0)",
              rows=3, width=37, seed=104, neg_inf=[[0, 5], [2, 36]]),
        _case("large-logits", "values up to about ±600: exp overflows without the row max "
              "subtracted", rows=2, width=64, seed=105, scale=200.0),
        _case("fp16-width-3000", "fp16 input, 3000 columns: fp32 arithmetic, fp16 output",
              rows=2, width=3000, seed=106, dtype="float16"),
        _case("strided-rows", "a view with row stride 33 for width 20: use x.stride(0)",
              rows=5, width=20, seed=107, stride=33),
        _case("bf16", "bfloat16 input (graded on CUDA; refused under the interpreter)", rows=2,
              width=100, seed=108, dtype="bfloat16", report=True),
        _case(f"hidden-{seed}", f"seeded: width {width}", rows=rng.randint(1, 6), width=width,
              seed=rng.randrange(1 << 30), dtype=rng.choice(["float32", "float16"]),
              scale=rng.choice([1.0, 10.0])),
    ]


def expected(case: Case) -> Any:
    import torch

    x = inputs.softmax_inputs(case.params, "cpu")["x"]
    return torch.softmax(x.double(), dim=-1)


def _variants(p: dict[str, Any]) -> dict[str, Any]:
    import torch

    x = inputs.softmax_inputs(p, "cpu")["x"].double()
    rows, width = x.shape
    block = 1 << max(0, (width - 1).bit_length())
    padded = torch.cat([x, torch.zeros((rows, block - width), dtype=x.dtype)], dim=1)
    raw = inputs.softmax_inputs(p, "cpu")["x"]
    flat = torch.as_strided(raw, (rows, width), (width, 1)).double()
    out = {
        "masked lanes loaded as 0.0 (other=0): the padding past the width added exp(0 - max) "
        "to every row's sum — load them as -inf": torch.softmax(padded, -1)[:, :width],
        "rows read n_cols apart instead of x.stride(0) apart (x is a view here)":
            torch.softmax(flat, -1),
    }
    return out


NAN_HINTS = {
    "large-logits": "values here reach about ±600: exp overflows fp32 past 88.7 — subtract the "
                    "row max before exp",
    "neg-inf-entries": "this row holds -inf entries: exp(-inf - max) is 0; NaN comes from "
                       "-inf - (-inf) or 0 * inf",
}


def check(case: Case, got: Any, expected: Any) -> Verdict:
    early = answered(case, got, "softmax")
    if early is not None:
        return early
    p = case.params
    return check_tensor(case, got["out"], expected, what="softmax", dtype=p["dtype"],
                        variants=lambda: _variants(p),
                        nan_hint=NAN_HINTS.get(case.id, "subtract the row max before exp and "
                                               "load masked lanes as -inf"))
