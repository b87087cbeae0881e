"""Level 3 - batched verification (`verify_batch`): each row's law is its solo law.

The same structure and law tests as level 2, per table, on rows interleaved so that neighbours
accept different lengths; every test at FAMILY_ALPHA / (tests in the level).

Boundaries, special values and interactions, each with its case:
- B = 1 (a batch of one row, many calls): L3-one-row; k = 0 for every row: L3-k0.
- rows that accept 0..k tokens side by side (padding must never leak into a shorter row):
  L3-mixed-rows, whose tables include all accepted (p == q), none accepted (disjoint supports),
  q(y) = 0, p(x) = 0, V = 2 and warped rows, each padded to k = 3, V = 8 (zeros beyond V).
- randomness only from `generator`: L3-reproducible.
- V = 32 000 (no Python loop over the vocabulary; timed by the parent against the reference, the
  level's gate in exercise.toml): L3-large-vocab. Every timed call is checked, not only for
  possibility: a quarter of its rows have forced answers (always accepted with a one-hot bonus,
  or always rejected with a one-hot residual) compared exactly with the reference's, and half
  are fair coins on the first draft (p / q = 1/2), whose count of heads must be plausible.

Power (bug class: detection probability at n = L3_ROWS_PER_CASE = 2 000 rows per table, and
ONE_ROW_CALLS = 2 000 calls for one-row; per-test alpha = FAMILY_ALPHA / tests; computed by
tests/spec_verify/test_power.py from the exact law of each buggy verifier, noncentral
chi-square, the best of the joint, accepted-count and first-token tests; "-" = the bug cannot
show in that table; the seed-dependent hidden table is not listed):

RP resample from p after a rejection (not the residual); NC no coin (accept iff p >= q);
QP q read at the previous position; IR the ratio inverted (accept with min(1, q/p));
BK the bonus drawn from p_k instead of p_{k+1}.

    case                           RP       NC       QP       IR       BK
    one-row/rejections        >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    mixed-rows/rejections     >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    mixed-rows/p_eq_q               -        -  >0.9999        -  >0.9999
    mixed-rows/none_accepted        -        -        -        -        -
    mixed-rows/q_zero         >0.9999  >0.9999  >0.9999  >0.9999        -
    mixed-rows/p_zero         >0.9999  >0.9999  >0.9999  >0.9999        -
    mixed-rows/vocab_2        >0.9999  >0.9999  >0.9999  >0.9999        -
    mixed-rows/temperature    >0.9999  >0.9999  >0.9999  >0.9999  >0.9999

Effect size: total variation distance between the bug's block law and the correct one
(the sample size per case is in the header):

    case                           RP       NC       QP       IR       BK
    one-row/rejections          0.247    0.461    0.225    0.555    0.158
    mixed-rows/rejections       0.247    0.461    0.225    0.555    0.158
    mixed-rows/p_eq_q               -        -    0.115        -    0.503
    mixed-rows/none_accepted        -        -        -        -        -
    mixed-rows/q_zero           0.203    0.133    0.262    0.721        -
    mixed-rows/p_zero           0.277    0.317    0.150    0.259        -
    mixed-rows/vocab_2          0.188    0.320    0.238    0.540        -
    mixed-rows/temperature      0.173    0.345    0.130    0.242    0.387

Batch bugs: one acceptance count for every row (the batch minimum) makes almost every row of
L3-mixed-rows stop at 0 (detected with probability > 1 - 1e-9); no cumulative product along k
(a row keeps tokens after its first rejection) emits malformed rows whenever a later draft would
pass its coin after an earlier rejection (structural, > 1 - 1e-9 at 2 000 rows per table).
"""

from __future__ import annotations

from typing import Any

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import blocks, stats
from lab.exercises.spec_verify.grading.common import FAMILY_ALPHA
from lab.grader.api import Case, RunContext, Verdict
from questions.wording import plural

# Rows per table: at least 1.25x the smallest n at which every listed bug class that can show
# in a table is detected with probability > 0.9999 (BK on the rejections table needs the most;
# tests/spec_verify/test_power.py checks the margin), rounded up to 500. Each one-row call is a
# learner call (~0.3 ms on a CPU), so the one-row case holds the same number of rows.
L3_ROWS_PER_CASE = 2_000
ONE_ROW_CALLS = 2_000
MIXED = ["rejections", "p_eq_q", "none_accepted", "q_zero", "p_zero", "vocab_2", "temperature"]


def tables(seed: int) -> list[dict[str, Any]]:
    rows = [blocks.law_tables(n, 0) for n in MIXED]
    rows.append(blocks.law_tables("hidden", seed * 10 + 7))
    return [blocks.pad(r, 3, 8) for r in rows]


def cases(seed: int) -> list[Case]:
    rows = tables(seed)
    k0 = blocks.law_tables("k0", 0)
    one = blocks.law_tables("rejections", 0)
    n_tests = sum(blocks.tests_in(r) for r in rows) + blocks.tests_in(k0) + blocks.tests_in(one)
    alpha = stats.bonferroni_alpha(FAMILY_ALPHA, n_tests)
    s = seed % 100_000
    return [
        Case("L3-reproducible", 3, {"kind": "repro_batch", "rows": rows}, size=1,
             description="same generator seed -> same output; global RNG untouched"),
        Case("L3-one-row", 3, {"kind": "law_batch", "rows": [one], "per_row": 1,
                               "calls": ONE_ROW_CALLS, "alpha": alpha, "seed": s},
             size=2, timeout_s=60, description="B = 1: a batch of one row, called many times"),
        Case("L3-k0", 3, {"kind": "law_batch", "rows": [k0], "per_row": L3_ROWS_PER_CASE,
                          "alpha": alpha, "seed": s}, size=3, timeout_s=60,
             description="k = 0 for every row: a bonus token each"),
        Case("L3-mixed-rows", 3, {"kind": "law_batch", "rows": rows,
                                  "per_row": L3_ROWS_PER_CASE, "alpha": alpha, "seed": s},
             size=4, timeout_s=120,
             description="rows with different p, q interleaved: they accept different lengths; "
                         "each row's law must equal its solo law"),
        Case("L3-large-vocab", 3, {"kind": "large", "B": 64, "k": 2, "V": 32_000, "seed": s},
             size=5, timeout_s=60, timed=True,
             description="V = 32000: no Python loop over the vocabulary (timed vs the reference; "
                         "the level's gate bounds the median ratio)"),
    ]


def expected(case: Case, ctx: RunContext) -> Any:
    """Nothing for the law cases (the law comes from the params); for the timed case, the
    reference's own run (the parent times round trips of `drive.run`)."""
    if case.params["kind"] == "large":
        from lab.exercises.spec_verify import drive
        from lab.exercises.spec_verify.grading.common import reference

        return drive.run(reference(), case, ctx)
    return None


def check(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    if p["kind"] == "repro_batch":
        return blocks.repro(got)
    if p["kind"] == "large":
        return _check_large(p, got, expected)
    calls = got.get("calls") if isinstance(got, dict) else None
    n_calls = int(p.get("calls", 1))
    if not isinstance(calls, list) or len(calls) != n_calls:
        return Verdict(False, f"expected the rows of {plural(n_calls, 'call')}, got {calls!r:.80}")
    x, _, _, which, b = inputs.batch_calls(p)  # the rows drive.py handed to the learner
    outs: list[Any] = []
    for rows in calls:
        if not isinstance(rows, list) or len(rows) != b:
            length = len(rows) if isinstance(rows, list) else "?"
            return Verdict(False, f"verify_batch must return a list of B = {b} lists, "
                                  f"got {type(rows).__name__} of length {length}")
        outs += rows
    return blocks.judge_tables(p["rows"], outs, x.tolist(), which, float(p["alpha"]),
                               batch=True)


def _check_large(p: dict[str, Any], got: Any, expected: Any) -> Verdict:
    """Structure against the drafts of this call (the reference's run for the same seed says
    which drafts those were: the learner's child cannot choose them)."""
    out = got.get("rows") if isinstance(got, dict) else None
    b, k, v = int(p["B"]), int(p["k"]), int(p["V"])
    if not isinstance(out, list) or len(out) != b:
        return Verdict(False, f"verify_batch must return B = {b} lists")
    drafts = expected.get("drafts") if isinstance(expected, dict) else None
    if not isinstance(drafts, list) or got.get("drafts") != drafts:
        return Verdict(False, "this call's drafts are not the ones the grader drew (a result "
                              "from another call?)")
    for bi, (row, d) in enumerate(zip(out, drafts, strict=True)):
        if not isinstance(row, list) or not 1 <= len(row) <= k + 1:
            return Verdict(False, f"row {bi}: a block has 1..k+1 = {k + 1} tokens, got {row!r:.80}")
        if any(not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < v for t in row):
            return Verdict(False, f"row {bi}: token ids must be ints in [0, {v}), got {row}")
        if row[:-1] != d[: len(row) - 1]:
            return Verdict(False, f"row {bi}: tokens before the last must be the accepted draft "
                                  f"prefix {d[: len(row) - 1]}, got {row[:-1]} (padding leaked?)")
        impossible = _impossible(p, bi, d, row)
        if impossible:
            return Verdict(False, f"row {bi}: {impossible} — no correct verifier can return that")
    found = expected.get("rows") if isinstance(expected, dict) else None
    want: list[Any] = found if isinstance(found, list) else []
    forced = inputs.large_forced(int(p["seed"]), b, k, v)
    coins = [bi for bi, kind in forced.items() if kind == "coin"]
    heads = sum(len(out[bi]) >= 2 for bi in coins)
    if k and coins and min(heads, len(coins) - heads) <= COIN_TAIL:
        return Verdict(False, f"{heads} of {len(coins)} rows whose first draft has p / q = 1/2 "
                              f"accepted it (each is a fair coin: so lopsided a count has "
                              f"probability < 1e-6) — accept each draft with probability "
                              f"min(1, p / q), a coin per row from the generator")
    for bi in sorted(b_ for b_, kind in forced.items() if kind != "coin" and b_ < len(want)):
        if out[bi] != want[bi]:
            how = ("q == p at every drafted position (always accepted) and a one-hot bonus row"
                   if forced[bi] == "accept" else
                   "p is one-hot on a token q never drafts (always rejected, and the residual "
                   "is that one-hot)")
            return Verdict(False, f"row {bi}: its answer is forced ({how}): expected "
                                  f"{want[bi]}, got {out[bi]} — every row of the batch must be "
                                  "verified, with its own p and q")
    return Verdict(True)


# 32 fair coins: P(at most 2 heads or at most 2 tails) = 2 * (1 + 32 + 496) / 2^32 < 2.5e-7 per
# timed call, so even 100 checked calls fail a correct verifier with probability < 3e-5
COIN_TAIL = 2


def _impossible(p: dict[str, Any], bi: int, drafts: list[int], row: list[int]) -> str:
    """What a correct verifier can never output for this row, whatever its coins: a draft with
    p >= q is always accepted (u < 1 <= p/q), one with p = 0 never; a token after a rejection
    comes from max(0, p - q) (so p > q there), a bonus from p (so p > 0)."""
    tq, tp = inputs.large_inputs(int(p["seed"]), int(p["B"]), int(p["k"]), int(p["V"]))
    m, k = len(row) - 1, int(p["k"])
    for j in range(m):
        if float(tp[bi, j, drafts[j]]) <= 0.0:
            return f"draft {j} (token {drafts[j]}) has p = 0 but was accepted"
    last = row[-1]
    if m == k:
        return "" if float(tp[bi, k, last]) > 0.0 else f"the bonus token {last} has p = 0"
    p_x, q_x = float(tp[bi, m, drafts[m]]), float(tq[bi, m, drafts[m]])
    if p_x >= q_x:
        return (f"draft {m} (token {drafts[m]}) has p {p_x:.3g} >= q {q_x:.3g}, so it is always "
                "accepted, but the block stopped there")
    if float(tp[bi, m, last]) <= float(tq[bi, m, last]):
        return (f"the token after the rejection ({last}) has p <= q there: it must come from "
                "max(0, p - q)")
    return ""
