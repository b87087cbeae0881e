"""Level 1 - one row's logits processors (`process_logits`), judged bit for bit.

Every cell of CONTRACT.md's table has its case here (the ids are the table's); hidden cases
draw random rows and parameter sets from the grading seed. The expected row is the
reference's, which is transformers' own processors where transformers has them.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from lab.exercises.sampling import inputs
from lab.exercises.sampling.grading import variants
from lab.exercises.sampling.grading.common import as_tensor, diff_ids, fmt
from lab.grader.api import Case, Verdict

LN = math.log

# (id, logits recipe, params, prompt, output, description)
FIXED: list[tuple[str, dict[str, Any], dict[str, Any], list[int], list[int], str]] = [
    ("temp-neutral", {"V": 50, "seed": 1}, {"temperature": 1.0}, [], [],
     "T = 1 changes nothing"),
    ("temp-scale", {"V": 50, "seed": 2}, {"temperature": 0.7}, [], [], "logits / 0.7"),
    ("temp-high", {"V": 50, "seed": 3}, {"temperature": 2.5}, [], [], "logits / 2.5"),
    ("temp-tiny", {"V": 50, "seed": 4}, {"temperature": 1e-3}, [], [],
     "T = 0.001 is a division, not greedy"),
    ("temp-epsilon", {"V": 50, "seed": 28}, {"temperature": 1e-6}, [], [],
     "T = 1e-6, under vLLM's 1e-5 greedy epsilon: still a division (only T = 0 is greedy)"),
    ("greedy-T0", {"V": 50, "seed": 5}, {"temperature": 0.0}, [], [],
     "T = 0: the argmax alone, at its own logit"),
    ("greedy-tie", {"values": [1.0, 3.0, 0.5, 3.0, 3.0]}, {"temperature": 0.0}, [], [],
     "T = 0 with a three-way tie: the lowest id"),
    ("topk-0", {"V": 50, "seed": 6}, {"top_k": 0}, [], [], "top_k = 0 is off"),
    ("topk-1", {"V": 50, "seed": 7}, {"top_k": 1}, [], [], "top_k = 1"),
    ("topk-5", {"V": 1000, "seed": 8}, {"top_k": 5}, [], [], "top_k = 5"),
    ("topk-eq-V", {"V": 20, "seed": 9}, {"top_k": 20}, [], [], "top_k = V keeps all"),
    ("topk-gt-V", {"V": 20, "seed": 10}, {"top_k": 25}, [], [], "top_k > V keeps all"),
    ("topk-ties", {"values": [2.0, 1.0, 2.0, 1.0, 1.0, 0.0, 1.0]}, {"top_k": 3}, [], [],
     "top_k = 3 with the 3rd value tied 4 ways: all ties kept"),
    ("topp-1", {"V": 64, "seed": 11, "scale": 60.0}, {"top_p": 1.0}, [], [],
     "top_p = 1 is off even where probabilities underflow to 0"),
    ("topp-0.9", {"V": 1000, "seed": 12}, {"top_p": 0.9}, [], [], "top_p = 0.9"),
    ("topp-crossing", {"values": [LN(0.5), LN(0.3), LN(0.15), LN(0.05)]}, {"top_p": 0.6}, [],
     [], "mass 0.5 < 0.6 <= 0.8: the crossing token (id 1) is kept"),
    ("topp-ties-cut", {"values": [2.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, -1.0]}, {"top_p": 0.5},
     [], [], "the cut falls inside five tied ids: all five kept"),
    ("topp-small", {"V": 50, "seed": 13}, {"top_p": 0.01}, [], [],
     "top_p = 0.01: the top id alone"),
    ("topp-0", {"values": [0.5, 2.0, 2.0, -1.0]}, {"top_p": 0.0}, [], [],
     "top_p = 0: the top id and its ties"),
    ("minp-0.1", {"V": 200, "seed": 14}, {"min_p": 0.1}, [], [], "min_p = 0.1"),
    ("minp-1", {"values": [1.0, 2.0, 2.0, 0.0]}, {"min_p": 1.0}, [], [],
     "min_p = 1: ids tied with the top probability"),
    ("minp-relative", {"values": [0.0] * 30 + [0.1]}, {"min_p": 0.5}, [], [],
     "a flat row: every p_i > 0.5 p_max although every p_i < 0.5"),
    ("rep-pos-neg", {"values": [2.0, -2.0, 1.0, -1.0, 0.0, 3.0]},
     {"repetition_penalty": 1.5}, [0, 1], [4], "positive / 1.5, negative x 1.5, 0 stays"),
    ("rep-lt1", {"values": [2.0, -2.0, 1.0, -1.0]}, {"repetition_penalty": 0.5}, [0], [1],
     "penalty < 1 encourages repeats"),
    ("rep-dup", {"V": 30, "seed": 15}, {"repetition_penalty": 1.3}, [3, 3, 7], [3, 7, 7],
     "ids repeated in prompt and output: penalised once"),
    ("rep-id0", {"values": [1.0, 1.0, -1.0]}, {"repetition_penalty": 2.0}, [0], [],
     "id 0 in the history (a falsy id) is penalised"),
    ("rep-empty", {"V": 30, "seed": 16}, {"repetition_penalty": 1.3}, [], [],
     "no history: nothing changes"),
    ("freq-counts", {"V": 30, "seed": 17}, {"frequency_penalty": 0.4}, [1], [2, 2, 2, 5],
     "frequency x count over the output"),
    ("pres-once", {"V": 30, "seed": 18}, {"presence_penalty": 0.7}, [], [2, 2, 2, 5],
     "presence once per id"),
    ("pen-prompt-not-counted", {"V": 30, "seed": 19},
     {"presence_penalty": 0.5, "frequency_penalty": 0.5}, [4, 4, 9], [9],
     "prompt ids are not counted by presence/frequency"),
    ("pres-negative", {"V": 30, "seed": 20}, {"presence_penalty": -1.0}, [], [3, 3],
     "a negative presence penalty raises the id"),
    ("freq-pres-both", {"V": 30, "seed": 21},
     {"frequency_penalty": 0.3, "presence_penalty": 0.6}, [], [1, 1, 4, 1],
     "frequency then presence, two subtractions"),
    ("all-neg-inf", {"values": [float("-inf")] * 6},
     {"temperature": 0.7, "top_k": 2, "top_p": 0.8, "min_p": 0.1, "repetition_penalty": 1.2,
      "presence_penalty": 0.5, "frequency_penalty": 0.5}, [1], [2],
     "a row of -inf stays -inf (no NaN)"),
    ("some-neg-inf", {"V": 40, "seed": 22, "neg_inf": list(range(0, 40, 3))},
     {"top_p": 0.8, "min_p": 0.05}, [], [], "-inf ids among the rest"),
    ("vocab-1", {"values": [0.3]}, {"temperature": 0.5, "top_k": 1, "top_p": 0.5,
                                    "min_p": 0.5}, [0], [0], "V = 1"),
    ("vocab-2", {"values": [0.3, -0.2]}, {"top_k": 1, "repetition_penalty": 1.2}, [1], [],
     "V = 2"),
    ("rep-then-temp", {"V": 30, "seed": 23}, {"repetition_penalty": 1.4, "temperature": 0.5},
     [1, 2], [3], "penalty on the raw logits, then / T"),
    ("pres-then-temp", {"V": 30, "seed": 27},
     {"temperature": 0.5, "frequency_penalty": 0.5, "presence_penalty": 0.5}, [], [1, 1, 2],
     "presence/frequency subtracted from the raw logits, then / T"),
    ("topk-then-topp", {"V": 100, "seed": 24}, {"top_k": 3, "top_p": 0.5}, [], [],
     "top-p on the top-k survivors"),
    ("temp-before-topp", {"values": [2.0, 1.5, 1.0, 0.5, 0.0]},
     {"temperature": 3.0, "top_p": 0.5}, [], [], "top-p sees softmax(logits / T)"),
    ("topp-then-minp", {"V": 200, "seed": 25}, {"top_p": 0.7, "min_p": 0.3}, [], [],
     "min-p on the top-p survivors"),
    ("topp-then-minp-order", {"values": [LN(0.4), LN(0.3), LN(0.2), LN(0.1)]},
     {"top_p": 0.75, "min_p": 0.3}, [], [],
     "top-p first keeps ids 0-2 (0.7 < 0.75), min-p then drops nothing more; min-p first "
     "would drop id 3 and top-p then keep only ids 0-1"),
    ("penalty-then-greedy", {"values": [3.0, 2.9, 1.0, -1.0]},
     {"temperature": 0.0, "repetition_penalty": 1.5}, [], [0],
     "T = 0 after a penalty moved the argmax"),
    ("all-on", {"V": 1000, "seed": 26, "step": 0.5},
     {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.2,
      "presence_penalty": 0.3, "frequency_penalty": 0.2}, [5, 6, 7, 7], [7, 8, 8, 9],
     "every processor at once, tied logits"),
]


THRESHOLD_ROW = [2.0, 1.0, 0.5, 0.0, -1.0]


def on_threshold() -> float:
    """top_p whose 1 - p equals, in float32, the mass of THRESHOLD_ROW's two smallest ids as
    TopPLogitsWarper sums it (ascending softmax, cumsum): the `<=` of its cut decides them."""
    row = torch.tensor([THRESHOLD_ROW]).sort(descending=False).values
    return 1.0 - float(row.softmax(-1).cumsum(-1)[0, 1])


# softmax of [ln 4, 0, -3] in float32: p_1 == 0.25 x p_0 exactly (0.25 is exact in float32)
MIN_P_ROW = [float(torch.tensor(math.log(4.0), dtype=torch.float32)), 0.0, -3.0]
MIN_P_PAST = float(torch.nextafter(torch.tensor(0.25), torch.tensor(1.0)))  # float32's next


def boundary_cases() -> list[tuple[str, dict[str, Any], dict[str, Any], list[int], list[int],
                                   str]]:
    """The top-p cut's and min-p's comparisons exactly on their thresholds, and just past."""
    p = on_threshold()
    return [
        ("minp-on-threshold", {"values": MIN_P_ROW}, {"min_p": 0.25}, [], [],
         "p_1 equals min_p x p_max exactly: kept (only p < min_p x p_max is dropped)"),
        ("minp-past-threshold", {"values": MIN_P_ROW}, {"min_p": MIN_P_PAST}, [], [],
         "min_p one float32 step over 0.25: p_1 is under the threshold, dropped"),
        ("topp-on-threshold", {"values": THRESHOLD_ROW}, {"top_p": p}, [], [],
         "the mass of the two smallest ids equals 1 - top_p exactly: both dropped (<=)"),
        ("topp-past-threshold", {"values": THRESHOLD_ROW}, {"top_p": p + 1e-6}, [], [],
         "1 - top_p just under the two smallest ids' mass: only the smallest dropped"),
    ]


def cases(seed: int) -> list[Case]:
    out = [Case(f"L1-{cid}", 1, {"logits": spec, "params": prm, "prompt": pr, "output": ou},
                size=len(spec.get("values", [])) or int(spec["V"]), description=desc)
           for cid, spec, prm, pr, ou, desc in [*FIXED, *boundary_cases()]]
    rng = random.Random(seed)
    for i in range(16):
        v = rng.choice([2, 50, 1000, 32000])
        spec: dict[str, Any] = {"V": v, "seed": rng.randrange(1 << 30),
                                "scale": rng.choice([1.0, 3.0, 10.0])}
        if rng.random() < 0.3:
            spec["step"] = 0.5
        hist = rng.sample(range(v), min(v, 8))
        out.append(Case(f"L1-hidden-{i}", 1, {
            "logits": spec, "params": inputs.random_params(rng),
            "prompt": [rng.choice(hist) for _ in range(rng.randrange(6))],
            "output": [rng.choice(hist) for _ in range(rng.randrange(10))]}, size=v))
    return out


def check(case: Case, got: Any, expected: Any) -> Verdict:
    out = as_tensor(got)
    if isinstance(out, str):
        return Verdict(False, f"process_logits {out}")
    want = expected["out"].detach().cpu()
    if out.shape != want.shape:
        return Verdict(False, f"process_logits returned shape {tuple(out.shape)}, expected "
                              f"{tuple(want.shape)} (one row in, one row out)")
    if out.dtype != want.dtype:
        return Verdict(False, f"process_logits returned {out.dtype}, expected {want.dtype} "
                              f"(keep the input's dtype)")
    if torch.equal(out, want):
        return Verdict(True)
    return Verdict(False, explain(case.params, out, want, "process_logits"))


def explain(p: dict[str, Any], out: torch.Tensor, want: torch.Tensor, what: str) -> str:
    """The named bug, else where the rows differ; with the inputs to replay."""
    row, params, prompt, output = inputs.row_inputs(p, "cpu")
    ids = diff_ids(out, want)
    head = (f"{what}: params {params}, prompt {prompt}, output {output}: at ids {ids} "
            f"expected {fmt(want, ids)}, got {fmt(out, ids)}")
    if bool(torch.isnan(out).any()) and not bool(torch.isnan(want).any()):
        return f"{head} - NaN in the output: a row of -inf must stay -inf"
    bug = variants.name_bug(out, row, params, prompt, output)
    if bug:
        return f"{head} - {bug}"
    finite = torch.isfinite(want) & torch.isfinite(out)
    if bool(((out == float("-inf")) == (want == float("-inf"))).all()) and bool(
            torch.allclose(out[finite], want[finite], rtol=1e-5, atol=1e-6)):
        return (f"{head} - the same ids survive and the values agree to 1e-5 but not bit for "
                f"bit: compute in the documented order and form (x / T; "
                f"x - frequency * count - presence * (count > 0), two subtractions)")
    return head
