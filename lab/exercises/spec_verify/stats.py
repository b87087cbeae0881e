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
from collections import Counter
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


def chi_square(
    observed: Mapping[Any, int], expected_probs: Mapping[Any, float], min_expected: float = 5.0
) -> ChiSquare:
    """Pearson's test with bins of expected count < min_expected pooled together."""
    n = sum(observed.values())
    impossible = tuple(o for o, c in observed.items() if c > 0 and expected_probs.get(o, 0.0) <= 0)
    keys = sorted(expected_probs, key=lambda o: -expected_probs[o])
    big = [o for o in keys if expected_probs[o] * n >= min_expected]
    small = [o for o in keys if 0 < expected_probs[o] * n < min_expected]
    bins: list[tuple[float, int]] = [(expected_probs[o] * n, observed.get(o, 0)) for o in big]
    pooled_e = sum(expected_probs[o] for o in small) * n
    pooled_o = sum(observed.get(o, 0) for o in small)
    if pooled_e > 0:
        if pooled_e >= min_expected or not bins:
            bins.append((pooled_e, pooled_o))
        else:  # fold a too-small pool into the smallest kept bin
            e, o = bins[-1]
            bins[-1] = (e + pooled_e, o + pooled_o)
    stat = sum((o - e) ** 2 / e for e, o in bins if e > 0)
    df = len(bins) - 1
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


def tally(blocks: Sequence[Sequence[int]]) -> Counter[Block]:
    return Counter(tuple(b) for b in blocks)


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


def critical_note(alpha: float) -> str:
    return f"per-test significance {alpha:.1e} (p-values below it fail)"


def is_finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))
