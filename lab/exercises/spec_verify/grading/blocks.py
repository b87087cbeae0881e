"""Judging sampled blocks (levels 2-3): the probability tables, each block's structure, and the
chi-square tests of the blocks' law. Shared by levels 2 and 3 (and the reproducibility probe of 4).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import torch

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import stats
from lab.grader.api import Verdict
from questions.wording import noun, plural

# ---------------------------------------------------------------------------------------------
# Fixed probability tables (explicit, so a failing case can be replayed by hand)


def _dirichlet(rng: random.Random, v: int, conc: float, zeros: int = 0) -> list[float]:
    xs = [rng.gammavariate(conc, 1.0) for _ in range(v)]
    for i in rng.sample(range(v), zeros):
        xs[i] = 0.0
    s = sum(xs)
    return [round(x / s, 6) for x in xs]


def _norm(row: list[float]) -> list[float]:
    s = sum(row)
    return [x / s for x in row]


def law_tables(name: str, seed: int) -> dict[str, Any]:
    """p (k+1 rows) and q (k rows) for one named situation; the drafts are sampled from q."""
    rng = random.Random(f"{name}-{seed}")
    if name == "rejections":  # distinct rows per position, many rejections: the workhorse case
        v, k = 6, 3
        p = [_dirichlet(rng, v, 0.7) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 0.7) for _ in range(k)]
    elif name == "p_eq_q":  # never rejects, residual all zeros: no NaN, always k + bonus
        v, k = 5, 3
        q = [_dirichlet(rng, v, 1.0) for _ in range(k)]
        p = [*q, _dirichlet(rng, v, 1.0)]
    elif name == "q_zero":  # tokens the draft never proposes: only the residual can emit them
        v, k = 6, 2
        p = [_dirichlet(rng, v, 1.0) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 1.0, zeros=3) for _ in range(k)]
    elif name == "p_zero":  # drafted tokens the target forbids: always rejected
        v, k = 6, 2
        p = [_dirichlet(rng, v, 1.0, zeros=2) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 1.0) for _ in range(k)]
    elif name == "none_accepted":  # q's support disjoint from p's: every first draft rejected
        v, k = 6, 2
        p = [[0.0, 0.0, 0.0, *_dirichlet(rng, 3, 1.0)] for _ in range(k + 1)]
        q = [[*_dirichlet(rng, 3, 1.0), 0.0, 0.0, 0.0] for _ in range(k)]
    elif name == "k0":
        v, k = 7, 0
        p = [_dirichlet(rng, v, 1.0)]
        q = []
    elif name == "k1":  # one drafted token; id 0 carries the most mass in both
        v, k = 4, 1
        p = [[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]
        q = [[0.7, 0.1, 0.1, 0.1]]
    elif name == "vocab_1":  # V = 1: p == q == [1]; always k tokens of id 0 plus the bonus 0
        v, k = 1, 2
        p = [[1.0]] * (k + 1)
        q = [[1.0]] * k
    elif name == "vocab_2":
        v, k = 2, 2
        p = [[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]]
        q = [[0.4, 0.6], [0.9, 0.1]]
    elif name == "temperature":  # warped (T = 0.6, top-4) target vs a flatter T = 1.5 draft
        v, k = 8, 3
        logits = [[rng.gauss(0, 1.5) for _ in range(v)] for _ in range(k + 1)]

        def warp(row: list[float], t: float, top: int) -> list[float]:
            keep = sorted(range(v), key=lambda i: -row[i])[:top]
            ex = [math.exp(row[i] / t) if i in keep else 0.0 for i in range(v)]
            return [round(x, 6) for x in _norm(ex)]

        p = [warp(r, 0.6, 4) for r in logits]
        q = [warp(r, 1.5, 6) for r in logits[:k]]
    elif name == "hidden":  # different every grading run unless --seed is given
        v, k = rng.randint(3, 8), rng.randint(1, 3)
        conc = rng.choice([0.3, 0.7, 2.0])
        p = [_dirichlet(rng, v, conc) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, conc) for _ in range(k)]
    else:
        raise ValueError(f"unknown table {name!r}")
    return {"V": v, "k": k, "p": p, "q": q}


def pad(t: dict[str, Any], k: int, v: int) -> dict[str, Any]:
    """Embed a smaller table in [k, v]: extra tokens get probability 0, extra positions p == q.

    Positions beyond the table's own k copy an all-accepting p == q row so every row of a batch
    has the same k while still accepting different lengths.
    """
    p = [row + [0.0] * (v - len(row)) for row in t["p"]]
    q = [row + [0.0] * (v - len(row)) for row in t["q"]]
    while len(q) < k:
        q.append(p[len(q)])
        p.append(p[-1])
    return {"V": v, "k": k, "p": p, "q": q}


def tests_in(t: dict[str, Any]) -> int:
    """Chi-square tests on one table: joint, accepted count, first token, k residuals, bonus."""
    return 4 + int(t["k"])


def as_tables(t: dict[str, Any]) -> tuple[list[list[float]], list[list[float]]]:
    """The fp32 values the learner sees, renormalised exactly in fp64 (the laws use these)."""
    tp, tq = inputs.tensors(t)
    tp64, tq64 = tp.double(), tq.double()
    tp64 = tp64 / tp64.sum(-1, keepdim=True)
    tq64 = tq64 / tq64.sum(-1, keepdim=True).clamp_min(1e-300)
    return tp64.tolist(), tq64.tolist()


# ---------------------------------------------------------------------------------------------
# Structure of one block (checked before any statistics: one bad block is proof of a bug)

NO_BONUS = "the block is exactly the k drafted tokens with no target token after them"


def structure(out: Any, draft: list[int], tp: list[list[float]], tq: list[list[float]]) -> str:
    """'' when a block is well formed, else what is wrong with it."""
    k, v = len(draft), len(tp[0])
    if not isinstance(out, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                            for t in out):
        return f"must return list[int], got {out!r:.80}"
    if not out:
        return ("returned an empty block: a block always emits at least one token"
                + (" (k = 0: the bonus token from p_1 - bonus token dropped?)" if k == 0
                   else ""))
    bad = [t for t in out if not 0 <= t < v]
    if bad:
        return f"token id {bad[0]} is outside the vocabulary [0, {v})"
    m = 0
    while m < min(k, len(out)) and out[m] == draft[m]:
        m += 1
    for i in range(m):
        if tp[i][draft[i]] <= 0:
            return (f"accepted drafted token {draft[i]} at position {i} although the target gives "
                    f"it p = 0 (accept with probability min(1, p/q))")
    if m == len(out):
        x = draft[m - 1]
        if m == k:  # ambiguous alone; the level decides from the other blocks (see NO_BONUS)
            return NO_BONUS
        if tp[m - 1][x] >= tq[m - 1][x]:
            return (f"drafted token {x} at position {m - 1} has p = {tp[m - 1][x]:.3f} >= q = "
                    f"{tq[m - 1][x]:.3f}, so min(1, p/q) = 1 and it must be accepted; the block "
                    f"ended on it with no correction after it (p or q read at the wrong "
                    f"position?)")
        return (f"the rejected drafted token {x} at position {m - 1} was emitted as its own "
                f"correction, but norm(max(0, p - q)) is 0 there (p = {tp[m - 1][x]:.3f} < q = "
                f"{tq[m - 1][x]:.3f}); after a rejection sample from the residual "
                f"(resampling from p instead of the residual?)")
    if len(out) > m + 1:
        extra = len(out) - m - 1
        where = "the bonus token" if m == k else f"the correction at position {m}"
        return (f"emitted {plural(extra, 'token')} after {where} (block {out}, draft {draft}): "
                f"a block "
                f"stops at its first rejection and ends with exactly one target token"
                + (" (is a bonus token sampled even after a rejection?)" if m < k else ""))
    z = out[m]
    if m < k and not tp[m][z] > tq[m][z]:
        return (f"after rejecting position {m} the block emitted {z}, which has p = {tp[m][z]:.3f}"
                f" <= q = {tq[m][z]:.3f}: the correction must come from norm(max(0, p - q)) "
                f"(resampling from p instead of the residual?)")
    if m == k and tp[k][z] <= 0:
        return f"the bonus token {z} has p_{{k+1}} = 0: sample it from the last row of target_probs"
    return ""


def tally(blocks: list[Any], drafts: list[list[int]], tables: list[tuple[list[list[float]],
          list[list[float]]]], which: list[int], suffix: str = ""
          ) -> tuple[list[Counter[tuple[int, ...]]], list[str], int]:
    """Per table: counts of well-formed blocks; up to 3 example violations; how many there were."""
    counts: list[Counter[tuple[int, ...]]] = [Counter() for _ in tables]
    violations: list[str] = []
    nbad = 0
    for bi, (blk, d, j) in enumerate(zip(blocks, drafts, which, strict=True)):
        msg = structure(blk, d, *tables[j])
        if msg:
            nbad += 1
            if len(violations) < 3:
                where = f"row {bi} (table {j}), " if suffix else ""
                violations.append(f"{where}draft {d}: {msg}{suffix}")
            continue
        counts[j][tuple(blk)] += 1
    return counts, violations, nbad


def malformed(counts: list[Counter[tuple[int, ...]]], ks: list[int], violations: list[str],
              nbad: int) -> Verdict:
    """The verdict for a run with malformed blocks (named for the likely bug)."""
    examples = " | ".join(violations)
    full = any(len(key) == ks[j] + 1 for j, c in enumerate(counts) for key in c)
    head = plural(nbad, "malformed block")
    if all(NO_BONUS in v for v in violations):
        head = (("blocks that are exactly the k drafted tokens appear while other blocks "
                 "do end with a bonus: a drafted token a correct test accepts (p >= q) was "
                 "rejected and re-drawn as its own correction (q or p read at the wrong "
                 "position?)") if full else
                ("all k drafted tokens accepted and no bonus token followed (bonus token "
                 "dropped: sample one more from p_{k+1}, the last row of target_probs)"))
    return Verdict(False, f"{head}; e.g. {examples}")


def repro(got: Any) -> Verdict:
    """Same generator seed under two global seeds: equal outputs, global RNG untouched."""
    before, after = got.get("rng_before"), got.get("rng_after")
    if not (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor)
            and torch.equal(before, after)):
        return Verdict(False, "torch's global RNG state changed during the call: draw every "
                              "random number from `generator` (global RNG instead of the "
                              "generator?)")
    if got.get("a") != got.get("b"):
        a, b = got.get("a"), got.get("b")
        first = [a[:3], b[:3]] if isinstance(a, list) and isinstance(b, list) else [a, b]
        return Verdict(False, f"the same generator seed gave different outputs when only "
                              f"torch's global seed changed (first outputs: {first!r:.300}): "
                              f"use only `generator` for randomness")
    return Verdict(True)


# ---------------------------------------------------------------------------------------------
# The law tests


def law_tests(t: dict[str, Any], counts: dict[tuple[int, ...], int], alpha: float, where: str
              ) -> Verdict:
    tp, tq = as_tables(t)
    k = len(tq)
    n = sum(counts.values())
    pvals: dict[str, float] = {}

    def fail(what: str, res: stats.ChiSquare, hint: str) -> Verdict:
        detail = (f"{noun(len(res.impossible), 'impossible outcome')} "
                  f"{list(res.impossible)[:3]} observed" if res.impossible
                  else f"chi-square {res.stat:.1f} on {res.df} df, p = {res.p_value:.2e} < "
                       f"{alpha:.1e}")
        return Verdict(False, f"{where}{what}: {detail} over {res.n} blocks ({res.table}). {hint}")

    def bad(res: stats.ChiSquare) -> bool:
        return bool(res.impossible) or res.p_value < alpha

    # 1. accepted count
    acc_law = {m: pr for m, pr in enumerate(stats.accept_count_law(tp, tq)) if pr > 0}
    acc_obs: Counter[int] = Counter()
    for blk, c in counts.items():
        acc_obs[len(blk) - 1] += c
    res = stats.chi_square(acc_obs, acc_law)
    pvals["accepted"] = res.p_value
    if bad(res):
        return fail("the number of accepted drafted tokens is off", res,
                    "Accept x_i with probability min(1, p_i(x_i)/q_i(x_i)): one U(0,1) coin per "
                    "drafted token, p and q read at the same position i (no coin when p > q, or q "
                    "read at the wrong position, shifts this).")
    # 2. corrections after a rejection at position i, and the bonus
    for i in range(k + 1):
        obs: Counter[int] = Counter()
        for blk, c in counts.items():
            if len(blk) - 1 == i:
                obs[blk[-1]] += c
        if sum(obs.values()) < 20:
            continue
        law = ({z: pr for z, pr in enumerate(tp[k]) if pr > 0} if i == k else
               {z: pr for z, pr in enumerate(stats.residual(tp[i], tq[i])) if pr > 0})
        res = stats.chi_square(obs, law)
        pvals[f"last@{i}"] = res.p_value
        if bad(res):
            if i == k:
                return fail("the bonus token (all k accepted) is not distributed as p_{k+1}", res,
                            "Sample it from the last row of target_probs.")
            return fail(f"after a rejection at position {i} the emitted token is not distributed "
                        f"as norm(max(0, p_{i + 1} - q_{i + 1}))", res,
                        "Resample from the residual max(0, p - q), normalised (resampling from p "
                        "instead of the residual?).")
    # 3. first token ~ p_1 and the whole block
    first: Counter[int] = Counter()
    for blk, c in counts.items():
        first[blk[0]] += c
    res = stats.chi_square(first, {z: pr for z, pr in enumerate(tp[0]) if pr > 0})
    pvals["first"] = res.p_value
    if bad(res):
        return fail("the first emitted token is not distributed as p_1", res,
                    "Whatever happens later, a block's first token must follow the target.")
    res = stats.chi_square(counts, stats.block_law(tp, tq))
    pvals["joint"] = res.p_value
    if bad(res):
        return fail("the law of whole blocks differs from Leviathan/Chen's", res,
                    "Check each position's p_i, q_i and the stop rule.")
    return Verdict(True, f"{n} blocks", {f"p_{key}": v for key, v in pvals.items()})


def judge_tables(tables: list[dict[str, Any]], blocks: list[Any], drafts: list[list[int]],
                 which: list[int], alpha: float, batch: bool) -> Verdict:
    """Structure of every block, then the law tests per table."""
    exact = [as_tables(t) for t in tables]
    suffix = (" [in a batch each row stops at its own first rejection: a cumulative product of "
              "the accept mask along k, per row]") if batch else ""
    counts, violations, nbad = tally(blocks, drafts, exact, which, suffix)
    if nbad:
        return malformed(counts, [int(t["k"]) for t in tables], violations, nbad)
    pmin = 1.0
    for j, (t, c) in enumerate(zip(tables, counts, strict=True)):
        where = f"batch rows using table {j}: " if batch else ""
        verdict = law_tests(t, dict(c), alpha, where)
        if not verdict.passed:
            return verdict
        pmin = min([pmin, *verdict.metrics.values()])
    return Verdict(True, f"all chi-square tests pass at per-test alpha {alpha:.1e}",
                   {"min_p_value": pmin})
