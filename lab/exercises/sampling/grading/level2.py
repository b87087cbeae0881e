"""Level 2 - a batch, each row its own parameters and history (`process_batch`), bit for bit.

Boundaries and pairs, each with its case: B = 1 (L2-single); rows that share logits but not
parameters, so a leaked parameter or history shows (L2-leak-params, L2-leak-history); greedy and
sampled rows together (L2-greedy-mixed); a -inf row beside finite ones (L2-neg-inf-row); every
level-1 edge of one vocabulary size in one batch (L2-edges-*); a row without any history beside
rows with long ones (L2-leak-history); random batches (L2-hidden-*); and two timed cases,
each with its own gate and sized for the Python pass it catches (`timed_cases`).
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from lab.exercises.sampling import inputs
from lab.exercises.sampling.grading import level1, variants
from lab.exercises.sampling.grading.common import as_tensor
from lab.exercises.sampling.grading.level1 import FIXED, explain
from lab.grader.api import Case, Verdict

FULL = {"temperature": 0.6, "top_k": 5, "top_p": 0.8, "min_p": 0.1, "repetition_penalty": 1.5,
        "presence_penalty": 0.8, "frequency_penalty": 0.6}


def _row(spec: dict[str, Any], params: dict[str, Any], prompt: list[int] | None = None,
         output: list[int] | None = None) -> dict[str, Any]:
    return {"logits": spec, "params": params, "prompt": prompt or [], "output": output or []}


def _edges(v: int) -> list[dict[str, Any]]:
    """Level 1's fixed rows drawn with V = v (explicit-value rows of another size left out)."""
    return [_row(spec, prm, pr, ou) for _, spec, prm, pr, ou, _ in FIXED
            if spec.get("V") == v or len(spec.get("values", [])) == v]


def cases(seed: int) -> list[Case]:
    same = {"V": 40, "seed": 31}
    out = [
        Case("L2-single", 2, {"rows": [_row({"V": 50, "seed": 30}, FULL, [1, 2], [2, 3])]},
             size=1, description="B = 1"),
        Case("L2-leak-params", 2, {"rows": [_row(same, FULL), _row(same, {}),
                                            _row(same, {"temperature": 2.0}),
                                            _row(same, {"top_k": 1}), _row(same, {"top_p": 0.3}),
                                            _row(same, {"min_p": 0.5})]}, size=6,
             description="six rows, one logits row, six parameter sets"),
        Case("L2-leak-history", 2, {"rows": [
            _row(same, {"repetition_penalty": 2.0, "frequency_penalty": 0.5,
                        "presence_penalty": 0.5}, [1, 2, 3] * 5, [4, 5, 4, 6] * 5),
            _row(same, {"repetition_penalty": 2.0, "frequency_penalty": 0.5,
                        "presence_penalty": 0.5}),
            _row(same, {"repetition_penalty": 1.3, "frequency_penalty": 0.1}, [7], [8, 8])]},
             size=3, description="a long history beside an empty one, same parameters"),
        Case("L2-greedy-mixed", 2, {"rows": [_row(same, {"temperature": 0.0}),
                                             _row(same, {"temperature": 0.7, "top_k": 3}),
                                             _row(same, {"temperature": 0.0,
                                                         "repetition_penalty": 3.0}, [], [0]),
                                             _row(same, {"temperature": 1.0})]}, size=4,
             description="greedy rows beside sampled rows"),
        Case("L2-greedy-penalised", 2, {"rows": [
            _row({"values": [3.0, 2.9, 1.0, -1.0]}, {"temperature": 0.7,
                                                    "repetition_penalty": 1.5}, [], [0]),
            _row({"values": [3.0, 2.9, 1.0, -1.0]}, {"temperature": 0.0,
                                                    "repetition_penalty": 1.5}, [], [0])]},
             size=2, description="a greedy row whose repetition penalty moves its argmax "
                                 "(id 0: 3.0 / 1.5 < 2.9), beside a sampled row"),
        Case("L2-neg-inf-row", 2, {"rows": [_row({"values": [float("-inf")] * 4}, FULL, [1], [2]),
                                            _row({"values": [1.0, 2.0, 2.0, 0.0]}, FULL, [1],
                                                 [2])]}, size=2,
             description="a row of -inf beside a finite one"),
    ]
    # level 1's comparisons exactly on their thresholds, side by side in one batch (a batched
    # cut written another way - `<=` for min-p, `<` for top-p, an epsilon for T - moves them);
    # one row per parameter set, so a wrong cut is not mistaken for a leak between rows
    five = level1.THRESHOLD_ROW
    # softmax of [ln 8, ln 8, 0, -3, -3] in float32: p_2 == 0.125 x p_max exactly, two ids tied
    # at the top (so the `<=` cut's answer is not the greedy one of the T = 0 row beside it)
    ln8 = float(torch.tensor(math.log(8.0), dtype=torch.float32))
    minp_row = [ln8, ln8, 0.0, -3.0, -3.0]
    out.append(Case("L2-thresholds", 2, {"rows": [
        _row({"values": five}, {"top_p": level1.on_threshold()}),
        _row({"values": minp_row}, {"min_p": 0.125}),
        _row({"values": [1.0, 0.5, 0.0, -0.5, -1.0]}, {"temperature": 1e-6}),
        _row({"values": [0.3, 1.2, -0.4, 0.8, 0.0]}, {"temperature": 0.0})]}, size=4,
        description="top-p and min-p exactly on their thresholds, T = 1e-6 beside T = 0, in "
                    "one batch"))
    for v in (50, 30):
        rows = _edges(v)
        out.append(Case(f"L2-edges-V{v}", 2, {"rows": rows}, size=len(rows) * v,
                        description=f"level 1's V = {v} cases as one batch"))
    rng = random.Random(seed)
    for i in range(6):
        b, v = rng.choice([(3, 50), (8, 1000), (16, 2000), (5, 7)])
        rows = []
        for _ in range(b):
            hist = rng.sample(range(v), min(v, 10))
            rows.append(_row({"V": v, "seed": rng.randrange(1 << 30),
                              "step": rng.choice([0.5, None])}, inputs.random_params(rng),
                             [rng.choice(hist) for _ in range(rng.randrange(8))],
                             [rng.choice(hist) for _ in range(rng.randrange(12))]))
        out.append(Case(f"L2-hidden-{i}", 2, {"rows": rows}, size=b * v))
    return out + timed_cases()


def timed_cases() -> list[Case]:
    """Two timed cases, each with its own gate (exercise.toml) and sized for the Python pass it
    catches while correct vectorised code stays well under it (statement.md has the figures):
    top-p on every row (a loop over every (row, id) takes seconds there), and long histories
    over a small vocabulary (a loop over history ids pays per id, correct code per batch). A
    mask tested id by id in Python costs a CPU about what correct masks over all rows do (4x
    apart at worst, under load), so no size places it far from a gate both ways."""
    return [
        Case("L2-timed-top-p", 2, {"B": 64, "V": 32000, "history": 128, "top_p_rows": 64,
                                   "penalised": True},
             size=64 * 32000, timed=True, timeout_s=30,
             slow_class="a Python loop over every (row, id) of the batch",
             description="B = 64 requests, V = 32000, histories of 128 + 128 ids, every "
                         "request with top-p, a repetition penalty and a top-k or min-p; "
                         "a fresh batch per timed call"),
        Case("L2-timed-history", 2, {"B": 64, "V": 4096, "history": 1024, "greedy": True},
             size=64 * 4096, timed=True, timeout_s=30,
             slow_class="a Python step per history id (or per (row, id))",
             description="B = 64 greedy requests, V = 4096, histories of 1024 + 1024 ids, "
                         "every request with all three penalties and no filter; a fresh "
                         "batch per timed call"),
    ]


def check(case: Case, got: Any, expected: Any) -> Verdict:
    out = as_tensor(got)
    if isinstance(out, str):
        return Verdict(False, f"process_batch {out}")
    want = as_tensor(expected)
    assert isinstance(want, torch.Tensor)
    if out.shape != want.shape or out.dtype != want.dtype:
        return Verdict(False, f"process_batch returned {tuple(out.shape)} {out.dtype}, expected "
                              f"{tuple(want.shape)} {want.dtype} (B rows in, B rows out)")
    if torch.equal(out, want):
        return Verdict(True)
    bad = [r for r in range(out.shape[0]) if not torch.equal(out[r], want[r])]
    if "rows" not in case.params:
        return Verdict(False, f"rows {bad[:8]} of {out.shape[0]} differ from the reference "
                              f"(replay with --seed and compare them with process_logits)")
    rows = case.params["rows"]
    r = bad[0]
    skipped = _greedy_unpenalised(out[r], rows[r])
    if skipped:
        return Verdict(False, f"row {r} of {len(rows)}: {skipped}")
    on_edge = _threshold_bug(out[r], rows[r])
    if on_edge:  # before the leak check: on its threshold a wrong cut can look like a neighbour's
        return Verdict(False, f"row {r} of {len(rows)}: {on_edge}")
    leak = _leak(out[r], rows, r)
    if leak:
        return Verdict(False, f"row {r} of {len(rows)}: {leak} - rows must not leak into each "
                              f"other (index every parameter and history by row)")
    return Verdict(False, f"row {r} of {len(rows)} ({len(bad)} rows differ): "
                          + explain(rows[r], out[r], want[r], "process_batch"))


def _greedy_unpenalised(got: torch.Tensor, spec: dict[str, Any]) -> str | None:
    """A greedy row processed without its penalties (a greedy row looked finished early)."""
    row, params, prompt, output = inputs.row_inputs(spec, "cpu")
    if float(params.get("temperature", 1.0)) != 0.0:
        return None
    for skipped in (("repetition_penalty",), ("presence_penalty", "frequency_penalty"),
                    ("repetition_penalty", "presence_penalty", "frequency_penalty")):
        bare = {**params, **{k: inputs.NEUTRAL[k] for k in skipped}}
        if bare != params and torch.equal(got, variants.process(row, bare, prompt, output)):
            return ("a greedy row (T = 0) skipped its penalties: every row is penalised first, "
                    "and greedy takes the argmax of the penalised row")
    return None


THRESHOLD_BUGS = ("topp_strict_threshold", "minp_le_threshold", "small_temp_greedy")


def _threshold_bug(got: torch.Tensor, spec: dict[str, Any]) -> str | None:
    """A comparison moved off its threshold (`<` for `<=`, an epsilon for T = 0) on this row
    with its own parameters."""
    row, params, prompt, output = inputs.row_inputs(spec, "cpu")
    want = variants.process(row, params, prompt, output)
    for bug in THRESHOLD_BUGS:
        alt = variants.process(row, params, prompt, output, bug)
        if not torch.equal(alt, want) and torch.equal(alt, got):
            return variants.BUGS[bug]
    return None


def _leak(got: torch.Tensor, rows: list[dict[str, Any]], r: int) -> str | None:
    row, params, prompt, output = inputs.row_inputs(rows[r], "cpu")
    for j, other in enumerate(rows):
        if j == r:
            continue
        _, p_j, pr_j, ou_j = inputs.row_inputs(other, "cpu")
        if p_j != params and torch.equal(got, variants.process(row, p_j, prompt, output)):
            return f"processed with row {j}'s parameters {p_j} instead of its own {params}"
        if (pr_j, ou_j) != (prompt, output) and torch.equal(
                got, variants.process(row, params, pr_j, ou_j)):
            return f"penalised with row {j}'s history instead of its own"
        for name in inputs.PARAM_NAMES:
            swapped = {**params, name: p_j.get(name, inputs.NEUTRAL[name])}
            if swapped != params and torch.equal(got, variants.process(row, swapped, prompt,
                                                                       output)):
                return (f"took row {j}'s {name} ({swapped[name]}) instead of its own "
                        f"({params.get(name, inputs.NEUTRAL[name])})")
    hist_all = [t for x in rows for t in [*x["prompt"], *x["output"]]]
    outs_all = [t for x in rows for t in x["output"]]
    for pr, ou, what in ((hist_all, outs_all, "every row's history pooled"),
                         (hist_all, output, "every row's history pooled (repetition penalty)")):
        if torch.equal(got, variants.process(row, params, pr, ou)):
            return f"penalised with {what}"
    return None
