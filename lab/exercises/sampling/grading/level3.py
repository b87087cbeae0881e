"""Level 3 - sampling with one torch.Generator per request (`sample`).

Repro cases (exact): a request's tokens are the same whatever batch it is in, at whatever row,
beside whatever neighbours and under whatever global seed; greedy rows (T = 0) take the argmax
and leave their generator untouched; and every token equals the reference's draw
(`torch.multinomial(softmax(row), 1, generator=g)`, once per sampled row per step).
Law cases (statistics first, so a wrong distribution is named before a wrong draw): N rows of one
scenario, each with its own seed, one step; Pearson's chi-square against softmax of the
contract's processed row, Bonferroni over the level's law cases (a correct sampler fails with
probability <= FAMILY_ALPHA). `POWER` holds, per case, the test's power against each
wrong-processing bug that changes that scenario's law (computed from the bugs' exact laws in
`variants`, noncentral chi-square); the case description and the statement quote them.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import torch

from lab.exercises.sampling import inputs
from lab.exercises.sampling.grading import stats, variants
from lab.exercises.sampling.grading.common import FAMILY_ALPHA
from lab.grader.api import Case, Verdict

LAW_N = 4000
# scenario name -> (logits recipe, params, prompt, output)
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any], list[int], list[int]]] = {
    "temp-topp": ({"values": [2.0, 1.6, 1.2, 1.0, 0.5, 0.0, -0.5, -1.0]},
                  {"temperature": 1.5, "top_p": 0.7}, [], []),
    "topk-minp": ({"values": [1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.0, -1.0, -2.0]},
                  {"temperature": 0.5, "top_k": 6, "min_p": 0.3}, [], []),
    "penalties": ({"values": [-1.0, -1.2, -0.3, -1.1, -2.0, -2.5, -1.4, -2.2]},
                  {"repetition_penalty": 1.8, "frequency_penalty": 0.2,
                   "presence_penalty": 0.8}, [0, 1], [2, 2, 2, 4, 3]),
}
LAW_TESTS = len(SCENARIOS)
# power_table() at LAW_N draws and alpha = FAMILY_ALPHA / LAW_TESTS, rounded (a test recomputes
# it: computing it costs ~4 s, too slow for cases())
POWER: dict[str, dict[str, float]] = {
    "temp-topp": {"topp_drops_crossing": 1.0, "topp_raw_logits": 1.0,
                  "temperature_multiplies": 1.0, "no_processing": 1.0},
    "topk-minp": {"topk_off_by_one": 1.0, "minp_absolute": 1.0, "temperature_multiplies": 0.9999,
                  "no_processing": 1.0},
    "penalties": {"rep_divides_all": 1.0, "rep_output_only": 1.0, "rep_per_occurrence": 1.0,
                  "freq_ignores_counts": 1.0, "pres_per_occurrence": 1.0,
                  "penalties_count_prompt": 1.0, "no_processing": 1.0},
}


def _law_rows(name: str, n: int = LAW_N) -> dict[str, Any]:
    spec, prm, pr, ou = SCENARIOS[name]
    row = {"logits": spec, "params": prm, "prompt": pr, "output": ou}
    return {"rows": [row], "repeat": n, "seed_from": 10_000, "steps": 1, "states": False}


def law(name: str, bug: str | None = None) -> dict[int, float]:
    spec, prm, pr, ou = SCENARIOS[name]
    probs = variants.process(inputs.logits_row(spec), prm, pr, ou, bug).softmax(-1)
    return {i: float(x) for i, x in enumerate(probs.tolist()) if x > 0}


@functools.cache
def power_table() -> dict[str, dict[str, float]]:
    """Per scenario, the test's power against each bug that changes its law."""
    alpha = FAMILY_ALPHA / LAW_TESTS
    out: dict[str, dict[str, float]] = {}
    for name in SCENARIOS:
        right = law(name)
        out[name] = {}
        for bug in variants.BUGS:
            wrong = law(name, bug)
            gap = max((abs(wrong.get(i, 0.0) - right.get(i, 0.0)) for i in {*wrong, *right}),
                      default=0.0)
            if wrong and gap > 1e-9:
                out[name][bug] = stats.power(right, wrong, LAW_N, alpha)
    return out


def _repro(name: str, x_row: dict[str, Any], neighbours: list[dict[str, Any]],
           steps: int = 30) -> Case:
    x_seed = 4242
    a = [x_row, neighbours[0], neighbours[1]]
    b = [neighbours[2], neighbours[3], x_row, neighbours[4]]
    return Case(f"L3-repro-{name}", 3, {
        "batches": [{"rows": a, "seeds": [x_seed, 1, 2], "steps": steps},
                    {"rows": b, "seeds": [7, 8, x_seed, 9], "steps": steps}],
        "watch": [[0, 0], [1, 2]]}, size=steps * 7,
        description="request X (seed 4242) at row 0 of batch A and row 2 of batch B, other "
                    "neighbours, another global seed: the same tokens")


def cases(seed: int) -> list[Case]:
    def row(v: int, s: int, **prm: Any) -> dict[str, Any]:
        return {"logits": {"V": v, "seed": s}, "params": prm, "prompt": [], "output": []}

    v = 50
    nb = [row(v, 101, temperature=0.0), row(v, 102, top_k=5), row(v, 103, temperature=2.0),
          row(v, 104, temperature=0.0, repetition_penalty=1.3),
          row(v, 105, top_p=0.5, min_p=0.1)]
    out = [
        _repro("plain", row(v, 100 + seed % 97), nb),
        _repro("filtered", row(v, 200 + seed % 89, temperature=0.7, top_k=10, top_p=0.9), nb),
        _repro("greedy", row(v, 300, temperature=0.0), nb, steps=5),
        # just past T = 0: a sampled row whose draw is almost surely its argmax still draws
        _repro("tiny-temp", row(v, 400, temperature=1e-3), nb, steps=5),
    ]
    table = POWER
    for name in SCENARIOS:
        figures = ", ".join(f"{b} {p:.3f}" for b, p in sorted(table[name].items()))
        out.append(Case(f"L3-law-{name}", 3, {"batches": [_law_rows(name)], "scenario": name},
                        size=LAW_N * 10, timeout_s=30,
                        description=f"{LAW_N} rows of one request, each its own seed; "
                                    f"chi-square power against: {figures}"))
    return out


def _tokens(run: Any, b: int, v: int, steps: int) -> str | list[list[int]]:
    toks = run.get("tokens") if isinstance(run, dict) else None
    if not isinstance(toks, list) or len(toks) != steps:
        return f"expected {steps} calls' tokens, got {toks!r:.120}"
    for s, t in enumerate(toks):
        if not isinstance(t, list) or len(t) != b:
            return f"call {s}: sample must return a list of {b} ints (one per row), got {t!r:.120}"
        if any(not 0 <= x < v for x in t):
            return f"call {s}: token ids must be in [0, {v}), got {t}"
    return toks


def check(case: Case, got: Any, expected: Any) -> Verdict:
    runs, want = got.get("runs") if isinstance(got, dict) else None, expected["runs"]
    if not isinstance(runs, list) or len(runs) != len(want):
        return Verdict(False, f"no tokens came back: {got!r:.200}")
    batches = case.params["batches"]
    seqs = []
    for bi, batch in enumerate(batches):
        v = inputs.logits_row(batch["rows"][0]["logits"]).shape[0]
        toks = _tokens(runs[bi], len(batch["rows"]) * int(batch.get("repeat", 1)), v,
                       int(batch.get("steps", 1)))
        if isinstance(toks, str):
            return Verdict(False, f"batch {bi}: {toks}")
        bad = _filtered(batch, toks)
        if bad:
            return Verdict(False, f"batch {bi}: {bad}")
        seqs.append(toks)
    if "scenario" in case.params:
        return _check_law(case, seqs[0], want[0]["tokens"])
    (ba, ra), (bb, rb) = case.params["watch"]
    xa = [s[ra] for s in seqs[ba]]
    xb = [s[rb] for s in seqs[bb]]
    if xa != xb:
        return Verdict(False, f"request X (seed 4242) drew {xa[:12]} at row {ra} of batch A but "
                              f"{xb[:12]} at row {rb} of batch B: its tokens depend on the other "
                              f"rows or the global RNG - draw each row only from its own "
                              f"generator (never torch's global one, never a shared one)")
    for bi, batch in enumerate(batches):
        for r, rowspec in enumerate(batch["rows"]):
            # the drive's own record of the generator before and after the calls
            fresh = (runs[bi].get("states_before") or [None] * (r + 1))[r]
            state = runs[bi]["states"][r] if runs[bi].get("states") else None
            if not (isinstance(state, torch.Tensor) and isinstance(fresh, torch.Tensor)):
                continue
            moved = not torch.equal(state.cpu(), fresh.cpu())
            temp = float(rowspec["params"].get("temperature", 1.0))
            if 0.0 < temp < 0.05 and not moved and _others_drew(runs[bi], batch, r):
                return Verdict(False, f"batch {bi} row {r} has T = {temp:g} > 0 but its "
                                      f"generator never advanced: it was treated as greedy. "
                                      f"Only T = 0 is greedy; any T > 0 draws once per call "
                                      f"from its own generator, even when the draw is almost "
                                      f"surely the argmax")
            if temp != 0.0 and not moved:  # before the greedy rows: a shared draw moves theirs
                return Verdict(False, f"batch {bi} row {r} is sampled but its own generator "
                                      f"never advanced: it drew from another one (torch's "
                                      f"global RNG, the first row's, or one shared by the "
                                      f"batch) - draw with torch.multinomial(softmax(processed "
                                      f"row), 1, generator=g), g = that row's own generator")
        for r, rowspec in enumerate(batch["rows"]):
            if float(rowspec["params"].get("temperature", 1.0)) != 0.0:
                continue
            fresh = (runs[bi].get("states_before") or [None] * (r + 1))[r]
            state = runs[bi]["states"][r] if runs[bi].get("states") else None
            if (isinstance(state, torch.Tensor) and isinstance(fresh, torch.Tensor)
                    and not torch.equal(state.cpu(), fresh.cpu())):
                return Verdict(False, f"batch {bi} row {r} is greedy (T = 0) but its generator "
                                      f"advanced: a greedy row takes the argmax and draws nothing "
                                      f"(so a later sampled step of that request is unchanged)")
    for bi in range(len(batches)):
        if seqs[bi] != want[bi]["tokens"]:
            s = next(i for i, (x, y) in enumerate(zip(seqs[bi], want[bi]["tokens"],
                                                      strict=True)) if x != y)
            return Verdict(False, f"batch {bi}, call {s}: drew {seqs[bi][s]}, the reference "
                                  f"{want[bi]['tokens'][s]} with the same seeds: draw with "
                                  f"torch.multinomial(softmax(processed row), 1, generator=g) "
                                  f"once per sampled row per call, in row order")
    return Verdict(True)


def _others_drew(run: dict[str, Any], batch: dict[str, Any], row: int) -> bool:
    """Every other clearly sampled row (T >= 0.05) of the batch advanced its own generator: a
    tiny-T row that did not was treated as greedy, not handed another row's generator."""
    before, after = run.get("states_before") or [], run.get("states") or []
    for r, spec in enumerate(batch["rows"]):
        if r == row or float(spec["params"].get("temperature", 1.0)) < 0.05:
            continue
        if r >= min(len(before), len(after)) or torch.equal(after[r].cpu(), before[r].cpu()):
            return False
    return True


def _filtered(batch: dict[str, Any], toks: list[list[int]]) -> str | None:
    """A sampled id the contract filtered out (its processed logit is -inf)."""
    for s, row_toks in enumerate(toks):
        rows = inputs.step_batch(batch, s)["rows"]
        processed = [variants.process(*inputs.row_inputs(r, "cpu")) for r in rows]
        for i, t in enumerate(row_toks):
            r = i % len(rows)
            if processed[r][t] == float("-inf"):
                kept = torch.isfinite(processed[r]).nonzero().flatten().tolist()
                return (f"call {s} row {i} drew id {t}, which its parameters "
                        f"{rows[r]['params']} filter out (kept ids: {kept[:20]}): sample from "
                        f"the processed row")
    return None


def _check_law(case: Case, toks: list[list[int]], want: list[list[int]]) -> Verdict:
    name = case.params["scenario"]
    observed = Counter(toks[0])
    right = law(name)
    alpha = FAMILY_ALPHA / LAW_TESTS
    test = stats.chi_square(observed, right)
    if test.impossible:
        return Verdict(False, f"drew ids {list(test.impossible)} that the processed row gives "
                              f"probability 0 ({test.table})")
    if test.p_value < alpha:
        fits = []
        for bug, text in variants.BUGS.items():
            wrong = law(name, bug)
            if wrong != right and not any(observed.get(i, 0) and wrong.get(i, 0) <= 0
                                          for i in observed):
                fits.append((stats.chi_square(observed, wrong).p_value, text))
        hint = ""
        if fits:
            p_best, text = max(fits)
            if p_best > alpha:
                hint = f" Your draws fit this mistake's law (p = {p_best:.3g}): {text}."
        return Verdict(False, f"the sampled frequencies depart from softmax(processed row): "
                              f"chi-square {test.stat:.1f} on {test.df} df, p = "
                              f"{test.p_value:.2e} < {alpha:.1e} ({test.table}).{hint}")
    if toks != want:
        return Verdict(False, f"the law fits (p = {test.p_value:.3f}) but the draws differ from "
                              f"the reference's with the same seeds: one torch.multinomial("
                              f"softmax(row), 1, generator=g) per sampled row")
    return Verdict(True, f"chi-square p = {test.p_value:.3f}")
