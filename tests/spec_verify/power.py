"""Exact laws of classic buggy verifiers and the power of the grader's tests against them.

Used by test_power.py to verify the power tables printed in the level modules' docstrings.
Each bug is a verifier: accept(i, y) = P(accept drafted y at position i), after(i) = the law of
the token emitted after a rejection at i, bonus(k) = the law of the bonus token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from lab.exercises.spec_verify.grading import stats

Rows = list[list[float]]


def verifier_law(p: Rows, q: Rows, accept: Callable[[int, int], float],
                 after: Callable[[int], list[float]], bonus: list[float]
                 ) -> dict[tuple[int, ...], float]:
    """The block law when drafts are drawn from q and verified by (accept, after, bonus)."""
    k, v = len(q), len(p[0])
    law: Counter[tuple[int, ...]] = Counter()

    def walk(prefix: tuple[int, ...], mass: float) -> None:
        i = len(prefix)
        if i == k:
            for b in range(v):
                if bonus[b] > 0:
                    law[(*prefix, b)] += mass * bonus[b]
            return
        rej = sum(q[i][y] * (1.0 - accept(i, y)) for y in range(v))
        if rej > 0:
            dist = after(i)
            for z in range(v):
                if dist[z] > 0:
                    law[(*prefix, z)] += mass * rej * dist[z]
        for y in range(v):
            a = q[i][y] * accept(i, y)
            if a > 0:
                walk((*prefix, y), mass * a)

    walk((), 1.0)
    return dict(law)


def _ratio(a: float, b: float) -> float:
    return 1.0 if b <= 0 else min(1.0, a / b)


def bug_laws(p: Rows, q: Rows) -> dict[str, dict[tuple[int, ...], float]]:
    """The law of each level-2 bug class on one table (the verifier sees exactly p and q)."""
    k = len(q)

    def res(i: int) -> list[float]:
        return stats.residual(p[i], q[i])

    def correct(i: int, y: int) -> float:
        return _ratio(p[i][y], q[i][y])

    out = {
        "resample-from-p": verifier_law(p, q, correct, lambda i: p[i], p[k]),
        "no-coin": verifier_law(p, q, lambda i, y: float(p[i][y] >= q[i][y]), res, p[k]),
        "q-wrong-position": verifier_law(
            p, q, lambda i, y: _ratio(p[i][y], q[i - 1][y]) if i else correct(i, y), res, p[k]),
        "ratio-inverted": verifier_law(
            p, q, lambda i, y: 0.0 if p[i][y] <= 0 else _ratio(q[i][y], p[i][y]), res, p[k]),
    }
    if k:
        out["bonus-from-p_k"] = verifier_law(p, q, correct, res, p[k - 1])
    return out


def _marginal(law: dict[tuple[int, ...], float], key: Callable[[tuple[int, ...]], Any]
              ) -> dict[Any, float]:
    m: Counter[Any] = Counter()
    for blk, pr in law.items():
        m[key(blk)] += pr
    return dict(m)


def table_effect(p: Rows, q: Rows) -> dict[str, float | None]:
    """Per bug class: total variation distance between its block law and the correct one."""
    law0 = stats.block_law(p, q)
    out: dict[str, float | None] = {}
    for bug, law in bug_laws(p, q).items():
        tv = 0.5 * sum(abs(law.get(o, 0.0) - law0.get(o, 0.0)) for o in set(law0) | set(law))
        out[bug] = None if tv < 1e-9 else tv
    return out


def table_power(p: Rows, q: Rows, n: int, alpha: float) -> dict[str, float | None]:
    """Per bug class: P(the grader's joint, accepted-count or first-token test detects it) as
    the best of the three (a lower bound on the level's detection); None where the bug's law
    equals the correct law (it cannot show on this table)."""
    law0 = stats.block_law(p, q)
    out: dict[str, float | None] = {}
    for bug, law in bug_laws(p, q).items():
        keys = set(law0) | set(law)
        if max(abs(law.get(o, 0.0) - law0.get(o, 0.0)) for o in keys) < 1e-9:
            out[bug] = None
            continue
        best = 0.0
        for key in (lambda b: b, lambda b: len(b) - 1, lambda b: b[0]):
            m0, m1 = _marginal(law0, key), _marginal(law, key)
            best = max(best, stats.power(m0, m1, n, alpha))
        out[bug] = best
    return out


def untempered_first_token(p_t: list[float], q_t: list[float], q_raw: list[float]
                           ) -> list[float]:
    """Law of the first emitted token when drafts come from q_t = softmax(draft / T) but the
    verifier is handed q_raw = softmax(draft): accept with min(1, p/q_raw), residual
    norm(max(0, p - q_raw))."""
    v = len(p_t)
    acc = [q_t[y] * _ratio(p_t[y], q_raw[y]) for y in range(v)]
    rej = 1.0 - sum(acc)
    r = stats.residual(p_t, q_raw)
    return [acc[y] + rej * r[y] for y in range(v)]


BUGS = {"resample-from-p": "RP", "no-coin": "NC", "q-wrong-position": "QP",
        "ratio-inverted": "IR", "bonus-from-p_k": "BK"}


def format_table(rows: list[tuple[str, dict[str, float | None]]], effect: bool = False,
                 sizes: list[int] | None = None) -> str:
    """A power (or, with `effect`, total-variation) table as printed in a level docstring
    ('-': the bug cannot show there); `sizes`: a first column with each row's sample size."""
    def cell(v: float | None) -> str:
        if v is None:
            return "-"
        if effect:
            return f"{v:.3f}"
        return ">0.9999" if v > 0.9999 else f"{v:.4f}"

    width = max(len(name) for name, _ in rows)
    n_head = f"{'n':>7}" if sizes else ""
    lines = [f"    {'case'.ljust(width)}{n_head}" + "".join(f"{b:>9}" for b in BUGS.values())]
    for i, (name, powers) in enumerate(rows):
        n_cell = f"{sizes[i]:>7}" if sizes else ""
        lines.append(f"    {name.ljust(width)}{n_cell}" + "".join(f"{cell(powers.get(b)):>9}"
                                                               for b in BUGS))
    return "\n".join(lines)


def level2_cases() -> list[Any]:
    """Level 2's listed law cases (the seed-dependent hidden ones are not listed)."""
    from lab.exercises.spec_verify.grading import level2

    return [c for c in level2.cases(0) if c.params["kind"] == "law" and "hidden" not in c.id]


def level2_sizes() -> list[int]:
    return [int(c.params["samples"]) for c in level2_cases()]


def level2_rows(effect: bool = False, scale: float = 1.0
                ) -> list[tuple[str, dict[str, float | None]]]:
    """Per listed case: power at its sample size times `scale` (or, with `effect`, TV)."""
    from lab.exercises.spec_verify.grading import blocks

    law = level2_cases()
    rows = []
    for c in law:
        p, q = blocks.as_tables(c.params)
        rows.append((c.id, table_effect(p, q) if effect else
                     table_power(p, q, int(int(c.params["samples"]) * scale),
                                 float(c.params["alpha"]))))
    return rows


def level3_rows(effect: bool = False, scale: float = 1.0
                ) -> list[tuple[str, dict[str, float | None]]]:
    """Per listed table: power at its sample size times `scale` (or, with `effect`, TV)."""
    from lab.exercises.spec_verify.grading import blocks, level3

    case = next(c for c in level3.cases(0) if c.id == "L3-mixed-rows")
    one = next(c for c in level3.cases(0) if c.id == "L3-one-row")
    p, q = blocks.as_tables(one.params["rows"][0])
    n_one = int(one.params["calls"]) * int(one.params["per_row"])
    rows = [("one-row/rejections", table_effect(p, q) if effect else
             table_power(p, q, int(n_one * scale), float(one.params["alpha"])))]
    for name, t in zip(level3.MIXED, case.params["rows"], strict=False):
        p, q = blocks.as_tables(t)
        rows.append((f"mixed-rows/{name}", table_effect(p, q) if effect else
                     table_power(p, q, int(int(case.params["per_row"]) * scale),
                                 float(case.params["alpha"]))))
    return rows


def level4_rows(scale: float = 1.0) -> list[tuple[str, float, float]]:
    """Per level-4 law case: (id, total variation between the correct first-token law and the
    untempered-q loop's, P(the first-token test detects it) at the case's n (times `scale`) and
    alpha)."""
    import torch

    from lab.exercises.spec_verify import inputs
    from lab.exercises.spec_verify.grading import level4

    rows = []
    for c in level4.cases(0):
        p = c.params
        if p["kind"] != "law":
            continue
        target, draft, prompt, _ = inputs.models(p, "cpu")
        with torch.inference_mode():
            lt = target(input_ids=torch.tensor([prompt])).logits[0, -1].double()
            ld = draft(input_ids=torch.tensor([prompt])).logits[0, -1].double()
        t = float(p["temperature"])
        pt, qt, qr = (torch.softmax(x, -1).tolist() for x in (lt / t, ld / t, ld))
        bug = untempered_first_token(pt, qt, qr)
        tv = 0.5 * sum(abs(a - b) for a, b in zip(pt, bug, strict=True))
        pw = stats.power(dict(enumerate(pt)), dict(enumerate(bug)), int(int(p["runs"]) * scale),
                         float(p["alpha"]))
        rows.append((c.id, tv, pw))
    return rows


def format_level4(rows: list[tuple[str, float, float]]) -> str:
    def cell(v: float) -> str:
        return ">0.9999" if v > 0.9999 else f"{v:.4f}"

    width = max(len(name) for name, _, _ in rows)
    lines = [f"    {'case'.ljust(width)}  TV(untempered)  power(untempered)"]
    lines += [f"    {name.ljust(width)}  {tv:14.3f}  {cell(pw):>17}" for name, tv, pw in rows]
    return "\n".join(lines)
