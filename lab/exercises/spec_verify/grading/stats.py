"""Exact block laws and chi-square tests for grading speculative-decoding samplers.

Equality cannot test a sampler; a distribution test can. With a small vocabulary and context-free
p_i, q_i the exact law of one verified block is known in closed form (Leviathan et al. 2023):

    P(accept y_1..y_m, then z) = prod_{i<=m} min(p_i, q_i)(y_i) * max(0, p_{m+1} - q_{m+1})(z)
                                                                                      (m < k)
    P(accept all k, then bonus b) = prod_{i<=k} min(p_i, q_i)(y_i) * p_{k+1}(b)

(the draft tokens are drawn from q by the grader, so these are joint over drafting + verifying).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

Block = tuple[int, ...]


def block_law(p: Sequence[Sequence[float]], q: Sequence[Sequence[float]]) -> dict[Block, float]:
    """Exact probability of every block a correct verifier can emit (k = len(q))."""
    k = len(q)
    v = len(p[0])
    law: dict[Block, float] = {}

    def walk(prefix: Block, mass: float) -> None:
        i = len(prefix)
        if i == k:
            for b in range(v):
                if p[k][b] > 0:
                    law[(*prefix, b)] = mass * p[k][b]
            return
        for z in range(v):
            r = p[i][z] - q[i][z]
            if r > 0:
                law[(*prefix, z)] = law.get((*prefix, z), 0.0) + mass * r
        for y in range(v):
            a = min(p[i][y], q[i][y])
            if a > 0:
                walk((*prefix, y), mass * a)

    walk((), 1.0)
    return law


def accept_count_law(p: Sequence[Sequence[float]], q: Sequence[Sequence[float]]) -> list[float]:
    """P(m drafted tokens accepted), m = 0..k: [1-b1, b1(1-b2), ..., b1..bk], b_i = sum min(p,q)."""
    k = len(q)
    betas = [sum(min(a, b) for a, b in zip(p[i], q[i], strict=True)) for i in range(k)]
    out: list[float] = []
    run = 1.0
    for beta in betas:
        out.append(run * (1.0 - beta))
        run *= beta
    out.append(run)
    return out


def residual(p_row: Sequence[float], q_row: Sequence[float]) -> list[float]:
    r = [max(0.0, a - b) for a, b in zip(p_row, q_row, strict=True)]
    s = sum(r)
    return [x / s for x in r] if s > 0 else list(p_row)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df), via the regularised upper incomplete gamma."""
    if df <= 0:
        return 1.0
    t = torch.special.gammaincc(
        torch.tensor(df / 2.0, dtype=torch.float64), torch.tensor(x / 2.0, dtype=torch.float64)
    )
    return float(t)


@dataclass(frozen=True)
class ChiSquare:
    """One goodness-of-fit test: statistic, degrees of freedom, p-value, and what was compared."""

    stat: float
    df: int
    p_value: float
    n: int
    impossible: tuple[object, ...]  # outcomes observed that have probability 0
    table: str  # a short expected-vs-observed table for messages


def bins(expected_probs: Mapping[Any, float], n: int, min_expected: float = 5.0
         ) -> list[list[Any]]:
    """The outcomes of each bin Pearson's test uses: outcomes with expected count >= min_expected
    alone, the rest pooled (a too-small pool folded into the smallest kept bin)."""
    keys = sorted(expected_probs, key=lambda o: -expected_probs[o])
    big = [[o] for o in keys if expected_probs[o] * n >= min_expected]
    small = [o for o in keys if 0 < expected_probs[o] * n < min_expected]
    if small:
        if sum(expected_probs[o] for o in small) * n >= min_expected or not big:
            big.append(small)
        else:
            big[-1] = big[-1] + small
    return big


def chi_square(
    observed: Mapping[Any, int], expected_probs: Mapping[Any, float], min_expected: float = 5.0
) -> ChiSquare:
    """Pearson's test with bins of expected count < min_expected pooled together."""
    n = sum(observed.values())
    impossible = tuple(o for o, c in observed.items() if c > 0 and expected_probs.get(o, 0.0) <= 0)
    groups = bins(expected_probs, n, min_expected)
    cells = [(sum(expected_probs[o] for o in g) * n, sum(observed.get(o, 0) for o in g))
             for g in groups]
    stat = sum((o - e) ** 2 / e for e, o in cells if e > 0)
    df = len(cells) - 1
    keys = sorted(expected_probs, key=lambda o: -expected_probs[o])
    rows = [f"{o!s}: expected {expected_probs[o]:.4f}, "
            f"observed {observed.get(o, 0) / max(n, 1):.4f}" for o in keys[:6]]
    return ChiSquare(
        stat=stat,
        df=df,
        p_value=chi2_sf(stat, df) if df > 0 else 1.0,
        n=n,
        impossible=impossible,
        table="; ".join(rows),
    )


def chi2_isf(alpha: float, df: int) -> float:
    """The critical value x with P(chi-square(df) >= x) = alpha (bisection on chi2_sf)."""
    lo, hi = 0.0, 10.0 * df + 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if chi2_sf(mid, df) > alpha else (lo, mid)
    return hi


def power(law: Mapping[Any, float], wrong: Mapping[Any, float], n: int, alpha: float) -> float:
    """P(Pearson's test of `law` on n draws from `wrong` rejects at alpha), asymptotically.

    The statistic is then noncentral chi-square with lambda = n * sum (w - p)^2 / p over the
    test's own bins (an observed outcome the law forbids fails outright: counted as detected).
    Evaluated as a Poisson mixture of central tails.
    """
    groups = bins(law, n)
    if any(wrong.get(o, 0.0) > 0 and law.get(o, 0.0) <= 0 for o in wrong):
        forbidden = sum(w for o, w in wrong.items() if law.get(o, 0.0) <= 0)
        miss_forbidden = (1.0 - forbidden) ** n
    else:
        miss_forbidden = 1.0
    df = len(groups) - 1
    if df <= 0:
        return 1.0 - miss_forbidden
    lam = 0.0
    for g in groups:
        e = sum(law[o] for o in g)
        w = sum(wrong.get(o, 0.0) for o in g)
        lam += n * (w - e) ** 2 / e
    crit = chi2_isf(alpha, df)
    half = lam / 2
    if half <= 0:
        return 1.0 - (1.0 - chi2_sf(crit, df)) * miss_forbidden
    # the Poisson weights are negligible outside half +- 12 sd
    lo = max(0, int(half - 12 * math.sqrt(half) - 20))
    hi = int(half + 12 * math.sqrt(half) + 20)
    miss = 0.0
    for j in range(lo, hi + 1):
        log_w = -half + j * math.log(half) - math.lgamma(j + 1)
        miss += math.exp(log_w) * (1.0 - chi2_sf(crit, df + 2 * j))
    return 1.0 - max(0.0, min(1.0, miss)) * miss_forbidden


def sequences_law(step_probs: Mapping[Block, Sequence[float]], length: int) -> dict[Block, float]:
    """Law of the first `length` tokens given next-token distributions for every prefix."""
    v = len(step_probs[()])
    law: dict[Block, float] = {}
    for seq in itertools.product(range(v), repeat=length):
        prob = 1.0
        for i in range(length):
            prob *= step_probs[seq[:i]][seq[i]]
            if prob == 0:
                break
        if prob > 0:
            law[seq] = prob
    return law


def bonferroni_alpha(family_alpha: float, tests: int) -> float:
    return family_alpha / max(tests, 1)


