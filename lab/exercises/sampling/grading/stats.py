"""Pearson's chi-square and its power, for level 3's law cases (no scipy: torch's gammaincc)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df)."""
    if df <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(df / 2.0, dtype=torch.float64),
                                         torch.tensor(x / 2.0, dtype=torch.float64)))


def chi2_isf(alpha: float, df: int) -> float:
    """The critical value x with P(chi-square(df) >= x) = alpha (bisection)."""
    lo, hi = 0.0, 10.0 * df + 200.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if chi2_sf(mid, df) > alpha else (lo, mid)
    return hi


def bins(law: Mapping[Any, float], n: int, min_expected: float = 5.0) -> list[list[Any]]:
    """Outcomes with expected count >= min_expected alone, the rest pooled."""
    keys = sorted(law, key=lambda o: -law[o])
    big = [[o] for o in keys if law[o] * n >= min_expected]
    small = [o for o in keys if 0 < law[o] * n < min_expected]
    if small:
        if sum(law[o] for o in small) * n >= min_expected or not big:
            big.append(small)
        else:
            big[-1] = big[-1] + small
    return big


@dataclass(frozen=True)
class ChiSquare:
    stat: float
    df: int
    p_value: float
    impossible: tuple[Any, ...]  # observed outcomes the law gives probability 0
    table: str


def chi_square(observed: Mapping[Any, int], law: Mapping[Any, float]) -> ChiSquare:
    n = sum(observed.values())
    impossible = tuple(o for o, c in observed.items() if c > 0 and law.get(o, 0.0) <= 0)
    cells = [(sum(law[o] for o in g) * n, sum(observed.get(o, 0) for o in g))
             for g in bins(law, n)]
    stat = sum((o - e) ** 2 / e for e, o in cells if e > 0)
    df = len(cells) - 1
    keys = sorted(law, key=lambda o: -law[o])[:5]
    table = "; ".join(f"id {o}: expected {law[o]:.3f}, observed {observed.get(o, 0) / n:.3f}"
                      for o in keys)
    return ChiSquare(stat, df, chi2_sf(stat, df) if df > 0 else 1.0, impossible, table)


def power(law: Mapping[Any, float], wrong: Mapping[Any, float], n: int, alpha: float) -> float:
    """P(the test of `law` on n draws from `wrong` rejects at alpha), asymptotically: the
    statistic is noncentral chi-square with lambda = n sum (w - p)^2 / p over the test's bins;
    an outcome the law forbids but `wrong` allows fails outright."""
    forbidden = sum(w for o, w in wrong.items() if w > 0 and law.get(o, 0.0) <= 0)
    miss_forbidden = (1.0 - forbidden) ** n
    groups = bins(law, n)
    df = len(groups) - 1
    if df <= 0:
        return 1.0 - miss_forbidden
    lam = sum(n * (sum(wrong.get(o, 0.0) for o in g) - sum(law[o] for o in g)) ** 2
              / sum(law[o] for o in g) for g in groups)
    crit = chi2_isf(alpha, df)
    half = lam / 2
    if half <= 0:
        return 1.0 - (1.0 - alpha) * miss_forbidden
    lo = max(0, int(half - 12 * math.sqrt(half) - 20))
    hi = int(half + 12 * math.sqrt(half) + 20)
    miss = 0.0
    for j in range(lo, hi + 1):
        w = math.exp(-half + j * math.log(half) - math.lgamma(j + 1))
        if w > 1e-12:
            miss += w * (1.0 - chi2_sf(crit, df + 2 * j))
    return 1.0 - max(0.0, min(1.0, miss)) * miss_forbidden
