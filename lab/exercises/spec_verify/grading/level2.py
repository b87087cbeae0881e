"""Level 2 - rejection sampling of one block (`verify_sampling`), judged by its law.

Equality cannot test a sampler: every block is first checked for structure (one impossible
block is proof of a bug), then the blocks of each case are tested against the exact law
(accepted count, the token after a rejection at each position, the bonus, the first token, the
whole block), each test at FAMILY_ALPHA / (tests in the level) - so a correct solution fails a
grading run of this level with probability <= 0.1 %.

Boundaries, special values and interactions, each with its case:
- k = 0 (one bonus token from p_1): L2-law-k0; k = 1: L2-law-k1; V = 1 (p == q == [1]): L2-law-
  vocab_1; V = 2: L2-law-vocab_2.
- all accepted (p == q, residual all zeros: no NaN): L2-law-p_eq_q; none accepted (q's support
  disjoint from p's: the residual is p): L2-law-none_accepted.
- q(y) = 0 where p(y) > 0 (only the residual reaches y): L2-law-q_zero; p(x) = 0 for a drafted
  x (always rejected): L2-law-p_zero; token id 0 carrying the most mass: L2-law-k1.
- temperature/top-k warped p and q (zeros in both): L2-law-temperature.
- randomness only from `generator` (same seed -> same blocks; global RNG untouched):
  L2-reproducible.

Power (bug class: effect; detection probability of the level's tests at n = L2_SAMPLES blocks
per case, per-test alpha = FAMILY_ALPHA / tests; computed by tests/spec_verify/test_power.py from
the exact law of each buggy verifier, noncentral chi-square, the best of the joint, accepted-count
and first-token tests; "-" = the bug cannot show in that case, e.g. no rejections):

POWER_TABLE

Structural bugs (a bonus after a rejection, no bonus after k acceptances, a correction the
residual cannot emit, an id outside the vocabulary) fail on the first malformed block: each case
with rejections shows one with probability > 1 - 1e-9. A correct solution's false-failure rate
is <= FAMILY_ALPHA = 0.1 % per level (Bonferroni).
"""

from __future__ import annotations

from typing import Any

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import blocks, stats
from lab.exercises.spec_verify.grading.common import FAMILY_ALPHA
from lab.grader.api import Case, RunContext, Verdict

L2_SAMPLES = 10_000

TABLES: list[tuple[str, str]] = [
    ("vocab_1", "V = 1: p == q == [1]; every block is k + 1 zeros"),
    ("vocab_2", "V = 2"),
    ("k0", "k = 0: the block is one bonus token from p_1"),
    ("k1", "k = 1; id 0 carries the most mass"),
    ("p_eq_q", "p == q: nothing is rejected and the residual is all zeros (no NaN)"),
    ("none_accepted", "q's support is disjoint from p's: every first draft is rejected"),
    ("q_zero", "q(y) = 0 where p(y) > 0: only the residual can emit y"),
    ("p_zero", "p(x) = 0 for drafted tokens: they must always be rejected"),
    ("rejections", "distinct p_i, q_i per position with frequent rejections"),
    ("temperature", "target at T = 0.6 with top-4, draft at T = 1.5 with top-6"),
]
HIDDEN = 2


def law_cases(seed: int) -> list[tuple[str, str, dict[str, Any]]]:
    out = [(n, d, blocks.law_tables(n, 0)) for n, d in TABLES]
    return out + [(f"hidden-{i}", "hidden random tables", blocks.law_tables("hidden",
                                                                             seed * 10 + i))
                  for i in range(HIDDEN)]


def cases(seed: int) -> list[Case]:
    law = law_cases(seed)
    alpha = stats.bonferroni_alpha(FAMILY_ALPHA, sum(blocks.tests_in(t) for _, _, t in law))
    out = [Case("L2-reproducible", 2, {"kind": "repro", **blocks.law_tables("rejections", 1)},
                size=1, description="same generator seed -> same output; torch's global RNG "
                                    "untouched")]
    for name, desc, t in law:
        out.append(Case(f"L2-law-{name}", 2, {"kind": "law", "samples": L2_SAMPLES,
                                              "alpha": alpha, "seed": seed % 100_000, **t},
                        size=10 + t["k"] * t["V"], timeout_s=120, description=desc))
    return out


def expected(case: Case, ctx: RunContext) -> None:
    """Nothing: the law is computed from the params in `check`."""
    return None


def check(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    if p["kind"] == "repro":
        return blocks.repro(got)
    outs = got.get("blocks") if isinstance(got, dict) else None
    n = int(p["samples"])
    if not isinstance(outs, list) or len(outs) != n:
        return Verdict(False, f"expected {n} blocks from {n} calls, got {outs!r:.80}")
    _, tq = inputs.tensors(p)
    drafts = inputs.draws(tq, n, int(p["seed"])).tolist()
    return blocks.judge_tables([p], outs, drafts, [0] * n, float(p["alpha"]), batch=False)
