"""The pieces under the grader: exact laws, the chi-square tail, the model interface, case sets."""

from __future__ import annotations

import math

import pytest
import torch

from lab.exercises.spec_verify import grading, stats
from lab.exercises.spec_verify.lm import CausalLM, plain_greedy


def test_block_law_is_a_distribution_and_matches_its_marginals() -> None:
    t = grading._law_tables("rejections", 0)
    p, q = grading._as_tables(t)
    law = stats.block_law(p, q)
    assert math.isclose(sum(law.values()), 1.0, abs_tol=1e-9)
    # first token ~ p_1 whatever happens later (the point of rejection sampling)
    first = [0.0] * t["V"]
    for blk, pr in law.items():
        first[blk[0]] += pr
    assert first == pytest.approx(p[0], abs=1e-9)
    by_len = [0.0] * (t["k"] + 1)
    for blk, pr in law.items():
        by_len[len(blk) - 1] += pr
    assert by_len == pytest.approx(stats.accept_count_law(p, q), abs=1e-9)


def test_p_equal_q_never_rejects() -> None:
    p, q = grading._as_tables(grading._law_tables("p_eq_q", 0))
    assert stats.accept_count_law(p, q)[-1] == pytest.approx(1.0)


def test_chi2_tail_matches_known_quantiles() -> None:
    assert stats.chi2_sf(3.841, 1) == pytest.approx(0.05, abs=1e-3)
    assert stats.chi2_sf(18.307, 10) == pytest.approx(0.05, abs=1e-3)
    assert stats.chi2_sf(0.0, 3) == pytest.approx(1.0)


def test_chi_square_pools_rare_bins_and_flags_impossible_outcomes() -> None:
    res = stats.chi_square({"a": 50, "b": 50, "z": 1}, {"a": 0.5, "b": 0.499, "c": 0.001})
    assert res.impossible == ("z",)
    res = stats.chi_square({"a": 90, "b": 10}, {"a": 0.5, "b": 0.5})
    assert res.p_value < 1e-10


def test_bonferroni_budget_is_spent_exactly_once_per_level() -> None:
    """The stated false-failure rate: per-test alpha x number of tests = FAMILY_ALPHA."""
    for level in (2, 3):
        law_cases = [c for c in grading.cases(level, 5) if "law" in c.params["kind"]]
        tests = sum(grading._tests_in(t) for c in law_cases
                    for t in ([c.params] if c.params["kind"] == "law" else c.params["rows"]))
        alpha = law_cases[0].params["alpha"]
        assert all(c.params["alpha"] == alpha for c in law_cases)
        assert alpha * tests <= grading.FAMILY_ALPHA * (1 + 1e-9)


def test_hidden_cases_depend_on_the_seed_and_replay_from_it() -> None:
    for level in (1, 2, 4, 5):
        a, b, c = grading.cases(level, 1), grading.cases(level, 1), grading.cases(level, 2)
        assert [x.params for x in a] == [x.params for x in b]
        assert [x.params for x in a] != [x.params for x in c]


def test_reference_handles_the_edge_cases_without_nan() -> None:
    from lab.reference import spec_verify as ref

    g = torch.Generator().manual_seed(0)
    p = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    # p == q: never rejected, bonus from the last row
    out = ref.verify_sampling([1], p[:1].clone(), p, g)
    assert out[0] == 1 and len(out) == 2
    # p(x) = 0 for the drafted token: always rejected, correction from the residual
    q = torch.tensor([[0.0, 0.0, 1.0]])
    for _ in range(50):
        blk = ref.verify_sampling([2], q, p, g)
        assert len(blk) == 1 and blk[0] in (0, 1)
    # k = 0
    assert len(ref.verify_sampling([], torch.zeros(0, 3), p[1:], g)) == 1
    rows = ref.verify_batch(torch.zeros(4, 0, dtype=torch.long), torch.zeros(4, 0, 3),
                            p[1:].expand(4, 1, 3), g)
    assert all(len(r) == 1 and 0 <= r[0] < 3 for r in rows)


@pytest.fixture(scope="module")
def tiny() -> tuple[CausalLM, CausalLM]:
    t, d = grading._tiny_pair(0, 64, 64, 2, 0.01)
    return CausalLM(t, name="target", record=True), CausalLM(d, name="draft")


def test_crop_then_refeed_gives_the_same_logits_as_a_fresh_pass(tiny: tuple[CausalLM, CausalLM]
                                                                   ) -> None:
    lm = tiny[0]
    lm.reset()
    fresh = lm.forward([3, 4, 5, 6])[-1]
    lm.reset()
    lm.forward([3, 4])
    lm.forward([9, 9, 9])  # rejected drafts
    lm.crop(2)
    assert lm.context == (3, 4) and lm.cache_len == 2
    again = lm.forward([5, 6])[-1]
    assert torch.allclose(fresh, again, atol=1e-5)
    assert lm.passes == 3 and lm.tokens_processed == 7  # counters restart at reset()
    assert [ps.cached for ps in lm.trace] == [0, 2, 2]


def test_interface_rejects_bad_input_clearly(tiny: tuple[CausalLM, CausalLM]) -> None:
    lm = tiny[0]
    lm.reset()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        lm.forward([64])
    with pytest.raises(ValueError, match="at least one"):
        lm.forward([])
    lm.forward([1, 2])
    with pytest.raises(ValueError, match=r"must be in \[0, 2\]"):
        lm.crop(3)
    lm.crop(0)
    assert lm.cache_len == 0


def test_reference_greedy_equals_plain_greedy_for_every_k(tiny: tuple[CausalLM, CausalLM]) -> None:
    from lab.reference.spec_verify import speculative_generate

    target, draft = tiny
    want = plain_greedy(target, [1, 2, 3], 30)
    for k in (0, 1, 2, 4, 8):
        assert speculative_generate(target, draft, [1, 2, 3], 30, k) == want
        assert target.passes <= 31


def test_tree_forward_matches_scoring_each_path_on_its_own(tiny: tuple[CausalLM, CausalLM]
                                                           ) -> None:
    """One tree pass with the tree mask = every root-to-node path scored separately."""
    from lab.reference.spec_verify import tree_attention_mask

    lm = tiny[0]
    parents, tokens = [-1, 0, 0, 1, 3, 2], [5, 6, 7, 8, 9, 10]
    lm.reset()
    lm.forward([1, 2, 3])
    tree = lm.forward_tree(tokens, tree_attention_mask(parents))
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.insert(0, tokens[j])
            j = parents[j]
        lm.reset()
        alone = lm.forward([1, 2, 3, *path])[-1]
        assert torch.allclose(tree[i], alone, atol=1e-4), i
    # keeping the prefix and one path leaves a cache equal to having fed that path
    lm.reset()
    lm.forward([1, 2, 3])
    lm.forward_tree(tokens, tree_attention_mask(parents))
    lm.keep([0, 1, 2, 3, 3 + 1, 3 + 3])  # root, node 1, node 3
    assert lm.context == (1, 2, 3, 5, 6, 8)
    nxt = lm.forward([9])[-1]
    lm.reset()
    assert torch.allclose(nxt, lm.forward([1, 2, 3, 5, 6, 8, 9])[-1], atol=1e-4)
