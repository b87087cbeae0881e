"""The power analysis printed in the level docstrings is true: recomputed here from the exact
law of each buggy verifier, and the test behind it is calibrated for a correct solution."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from lab.exercises.spec_verify.grading import blocks, level2, level3, level4, stats
from lab.exercises.spec_verify.grading.common import FAMILY_ALPHA
from tests.spec_verify import power


@pytest.mark.slow
@pytest.mark.parametrize("module, rows, sizes", [(level2, power.level2_rows, power.level2_sizes),
                                                 (level3, power.level3_rows, None)])
def test_docstring_power_and_effect_tables_are_recomputed_exactly(module: object, rows: object,
                                                                  sizes: object) -> None:
    doc = module.__doc__ or ""
    n = sizes() if sizes else None  # type: ignore[operator]
    assert power.format_table(rows(), sizes=n) in doc  # type: ignore[operator]
    assert power.format_table(rows(effect=True), effect=True) in doc  # type: ignore[operator]


@pytest.mark.slow
def test_sample_sizes_keep_a_margin_over_what_each_listed_bug_needs() -> None:
    """At 1/1.25 of each case's sample size every bug class that can show there is still
    detected with probability > 0.9999: the sizes were cut for speed, not below that line."""
    for name, powers in (power.level2_rows(scale=1 / 1.25)
                         + power.level3_rows(scale=1 / 1.25)):
        for bug, pw in powers.items():
            assert pw is None or pw > 0.9999, (name, bug, pw)


@pytest.mark.slow
def test_every_bug_class_is_caught_with_99_percent_wherever_it_can_show() -> None:
    seen: dict[str, float] = {}
    for name, powers in power.level2_rows() + power.level3_rows():
        for bug, pw in powers.items():
            if pw is not None:
                assert pw >= 0.99, (name, bug, pw)
                seen[bug] = max(seen.get(bug, 0.0), pw)
    assert set(seen) == set(power.BUGS)


@pytest.mark.slow
def test_untempered_q_is_caught_at_a_strong_temperature() -> None:
    rows = power.level4_rows()
    assert power.format_level4(rows) in (level4.__doc__ or "")
    (_, tv, pw), = [r for r in rows if r[0].endswith("untempered")]
    assert tv > 0.1 and pw >= 0.99
    (_, _, margin), = [r for r in power.level4_rows(scale=1 / 1.25) if r[0].endswith("untempered")]
    assert margin > 0.9999  # the runs keep a 1.25x margin over what the bug needs


def test_power_of_a_known_shift_matches_its_simulation() -> None:
    """stats.power on a fair vs 0.55-biased coin, checked by simulating the grader's own test."""
    law, wrong, n, alpha = {0: 0.5, 1: 0.5}, {0: 0.45, 1: 0.55}, 2000, 1e-3
    predicted = stats.power(law, wrong, n, alpha)
    rng = random.Random(0)
    hits = 0
    for _ in range(400):
        ones = sum(rng.random() < 0.55 for _ in range(n))
        hits += stats.chi_square({0: n - ones, 1: ones}, law).p_value < alpha
    assert abs(hits / 400 - predicted) < 0.08, (hits / 400, predicted)


@pytest.mark.slow
def test_a_correct_sampler_fails_a_test_at_about_its_alpha() -> None:
    """Pooled Pearson on the workhorse table is calibrated: blocks drawn from the exact law fail
    the joint test at a rate close to alpha (here 5 %, to measure it with few runs)."""
    p, q = blocks.as_tables(blocks.law_tables("rejections", 0))
    law = stats.block_law(p, q)
    keys, probs = list(law), list(law.values())
    rng = random.Random(1)
    fails = 0
    for _ in range(300):
        counts = Counter(rng.choices(keys, probs, k=2000))
        fails += stats.chi_square(counts, law).p_value < 0.05
    assert fails / 300 < 0.1


def test_each_sampling_level_spends_the_false_failure_budget_once() -> None:
    for level, mod in ((2, level2), (3, level3)):
        law_cases = [c for c in mod.cases(5) if "law" in c.params["kind"]]
        tests = sum(blocks.tests_in(t) for c in law_cases
                    for t in ([c.params] if c.params["kind"] == "law" else c.params["rows"]))
        alphas = {c.params["alpha"] for c in law_cases}
        assert len(alphas) == 1, level
        assert alphas.pop() * tests <= FAMILY_ALPHA * (1 + 1e-9)
    law4 = [c for c in level4.cases(5) if c.params["kind"] == "law"]
    assert sum(2 * c.params["alpha"] for c in law4) <= FAMILY_ALPHA * (1 + 1e-9)
