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

Power (detection probability of the level's tests at the n blocks of each case, column n, from
SAMPLES, else L2_SAMPLES; per-test alpha = FAMILY_ALPHA / tests; computed by
tests/spec_verify/test_power.py from the exact law of each buggy verifier, noncentral
chi-square, the best of the joint, accepted-count and first-token tests; "-" = the bug cannot
show in that case, e.g. no rejections; the seed-dependent hidden cases are not listed):

RP resample from p after a rejection (not the residual); NC no coin (accept iff p >= q);
QP q read at the previous position; IR the ratio inverted (accept with min(1, q/p));
BK the bonus drawn from p_k instead of p_{k+1}.

    case                      n       RP       NC       QP       IR       BK
    L2-law-vocab_1          500        -        -        -        -        -
    L2-law-vocab_2         3000  >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    L2-law-k0              1000        -        -        -        -        -
    L2-law-k1              1000  >0.9999  >0.9999        -  >0.9999  >0.9999
    L2-law-p_eq_q          1000        -        -  >0.9999        -  >0.9999
    L2-law-none_accepted   1000        -        -        -        -        -
    L2-law-q_zero          1500  >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    L2-law-p_zero          1000  >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    L2-law-rejections      2000  >0.9999  >0.9999  >0.9999  >0.9999  >0.9999
    L2-law-temperature     1000  >0.9999  >0.9999  >0.9999  >0.9999  >0.9999

Effect size: total variation distance between the bug's block law and the correct one
(the sample size per case is in the header):

    case                       RP       NC       QP       IR       BK
    L2-law-vocab_1              -        -        -        -        -
    L2-law-vocab_2          0.188    0.320    0.225    0.540    0.048
    L2-law-k0                   -        -        -        -        -
    L2-law-k1               0.150    0.500        -    0.300    0.280
    L2-law-p_eq_q               -        -    0.115        -    0.503
    L2-law-none_accepted        -        -        -        -        -
    L2-law-q_zero           0.203    0.133    0.231    0.721    0.070
    L2-law-p_zero           0.277    0.317    0.150    0.259    0.071
    L2-law-rejections       0.247    0.461    0.225    0.555    0.158
    L2-law-temperature      0.173    0.345    0.130    0.242    0.387

Structural bugs (a bonus after a rejection, no bonus after k acceptances, a correction the
residual cannot emit, an id outside the vocabulary) fail on the first malformed block: each case
with rejections shows one with probability > 1 - 1e-9. Every bug class is detected with
probability > 0.9999 by every fixed case where it can show at all; a correct solution's
false-failure rate is <= FAMILY_ALPHA = 0.1 % per level (Bonferroni over the level's tests).
"""

from __future__ import annotations

from typing import Any

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import blocks, stats
from lab.exercises.spec_verify.grading.common import FAMILY_ALPHA
from lab.grader.api import Case, RunContext, Verdict

# Blocks per case. Each learner call costs ~0.2 ms on a CPU, so the level's size is its grading
# time: every listed table gets at least 1.25x the smallest n at which each bug class that can
# show there is detected with probability > 0.9999 (tests/spec_verify/test_power.py checks the
# margin), rounded up to 500, and at least 1 000; the hidden random tables get 2 000.
L2_SAMPLES = 1_000

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
# Larger where a listed bug's effect is small (BK on vocab_2, rejections, q_zero); vocab_1 only
# needs enough blocks for its structural checks (every block is forced).
SAMPLES = {"vocab_1": 500, "vocab_2": 3_000, "rejections": 2_000, "q_zero": 1_500,
           "hidden": 2_000}


def law_cases(seed: int) -> list[tuple[str, str, dict[str, Any]]]:
    out = [(n, d, blocks.law_tables(n, 0)) for n, d in TABLES]
    return out + [(f"hidden-{i}", "hidden random tables", blocks.law_tables("hidden",
                                                                             seed * 10 + i))
                  for i in range(HIDDEN)]


def samples(name: str) -> int:
    return SAMPLES.get(name.split("-")[0], L2_SAMPLES)


def cases(seed: int) -> list[Case]:
    law = law_cases(seed)
    alpha = stats.bonferroni_alpha(FAMILY_ALPHA, sum(blocks.tests_in(t) for _, _, t in law))
    out = [Case("L2-reproducible", 2, {"kind": "repro", **blocks.law_tables("rejections", 1)},
                size=1, description="same generator seed -> same output; torch's global RNG "
                                    "untouched")]
    for name, desc, t in law:
        out.append(Case(f"L2-law-{name}", 2, {"kind": "law",
                                              "samples": samples(name),
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
