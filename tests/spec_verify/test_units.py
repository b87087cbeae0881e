"""The pieces under the grader: exact laws, the chi-square tail, the model interface, case sets."""

from __future__ import annotations

import math

import pytest
import torch

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import blocks, stats
from lab.exercises.spec_verify.lm import CausalLM, plain_greedy


def test_block_law_is_a_distribution_and_matches_its_marginals() -> None:
    t = blocks.law_tables("rejections", 0)
    p, q = blocks.as_tables(t)
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
    p, q = blocks.as_tables(blocks.law_tables("p_eq_q", 0))
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


def test_hidden_cases_depend_on_the_seed_and_replay_from_it() -> None:
    from lab.exercises.spec_verify import grading

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
    t, d = inputs.tiny_pair(0, 64, 64, 2, 0.01)
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


@pytest.mark.slow
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


def test_greedy_decoding_is_the_same_whichever_length_is_asked_first() -> None:
    """The child picks a case's EOS from a short decoding and the parent judges against a long
    one of the same prompt: an extended decoding must equal a fresh one token for token (and
    the lab's plain greedy loop), or the two processes would disagree on the case."""
    target, _ = inputs.tiny_pair(0, 64, 64, 2, 0.01)
    prompt = [7, 3, 9]
    short = inputs.greedy(target, prompt, 5)
    extended = inputs.greedy(target, prompt, 25)
    inputs._decodings.clear()
    fresh = inputs.greedy(target, prompt, 25)
    assert extended == fresh and extended.tokens[:5] == short.tokens
    assert fresh.tokens == plain_greedy(CausalLM(target), prompt, 25)
    assert inputs.greedy(target, prompt, 0).tokens == [] and len(fresh.gaps) == 25
    assert all(g >= 0 for g in fresh.gaps) and fresh.second[0] != fresh.tokens[0]


def test_eos_id_zero_is_a_relabelled_vocabulary_with_the_same_greedy_output() -> None:
    """eos_zero swaps ids 0 and the chosen EOS in both models: the greedy decoding is the same
    computation with that token renamed 0, so EOS id 0 appears exactly where it was asked."""
    from lab.exercises.spec_verify.grading.common import greedy_with_gaps
    from lab.grader.api import RunContext

    base = {"kind": "greedy", "model": "tiny", "pair_seed": 1, "prompt_seed": 3, "k": 4,
            "max_new_tokens": 30, "eos_at": 9}
    ctx = RunContext()
    plain = greedy_with_gaps(base, ctx, 30)
    zero = greedy_with_gaps({**base, "eos_zero": True}, ctx, 30)
    eos = plain["eos"]
    assert eos != 0 and zero["eos"] == 0
    assert zero["plain"] == [0 if t == eos else eos if t == 0 else t for t in plain["plain"]]
    assert zero["plain"].index(0) == plain["plain"].index(eos) >= 9


def test_eos_on_bonus_case_really_puts_eos_on_a_bonus_token() -> None:
    """draft == target: every block accepts all k drafts, so token k is the first bonus."""
    from lab.exercises.spec_verify.grading import level4
    from lab.exercises.spec_verify.grading.common import greedy_with_gaps
    from lab.grader.api import RunContext

    case = next(c for c in level4.cases(0) if c.id == "L4-greedy-eos-on-bonus")
    exp = greedy_with_gaps(case.params, RunContext(), int(case.params["max_new_tokens"]))
    assert exp["eos"] == 0 and exp["plain"].index(0) == case.params["k"]


def test_root_token_cases_send_a_careless_children_list_back_into_the_root() -> None:
    from lab.exercises.spec_verify.grading import level5
    from lab.grader.api import RunContext

    hit = 0
    for case in level5.cases(0):
        if "root-token" not in case.id:
            continue
        exp = level5.expected(case, RunContext())
        careless = level5.walk_variant(exp["tokens"], case.params["parents"], exp["best"],
                                       "root_child")
        assert 0 in careless[0] and (careless[0], careless[1]) != (exp["path"], exp["next"])
        hit += 1
    assert hit == 2


def test_the_child_side_returns_raw_outputs_and_imports_no_judge() -> None:
    """drive.py: no grading/stats/reference imports, only the lab modules it declares; its
    results are the learner's raw outputs (blocks, rows, tokens, the pass ledger)."""
    import ast
    from pathlib import Path

    from lab.exercises.spec_verify import drive

    tree = ast.parse(Path(drive.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    lab_imports = {m for m in imported if m.startswith("lab.")}
    assert lab_imports <= {*drive.CHILD_MODULES, "lab.exercises.spec_verify", "lab.grader.api"}
    assert not any("grading" in m or "reference" in m for m in imported)
    root = Path(drive.__file__).parent
    sources = [root / "drive.py", *root.joinpath("grading").glob("*.py")]
    assert not any("_is_reference" in f.read_text() for f in sources)


def test_every_call_gets_models_with_empty_caches() -> None:
    """The stub's promise: a loop that never calls reset() sees empty caches on every call."""
    from lab.exercises.spec_verify import drive
    from lab.grader.api import Case, RunContext

    seen: list[int] = []

    class NoReset:
        @staticmethod
        def speculative_generate(target, draft, prompt_ids, max_new_tokens, k, temperature=0.0,
                                 generator=None, eos_token_id=None):  # type: ignore[no-untyped-def]
            seen.append(target.cache_len + draft.cache_len)
            target.forward(prompt_ids)
            draft.forward(prompt_ids)
            return [1] * max_new_tokens

    case = Case("x", 4, {"kind": "law", "model": "law", "k": 1, "max_new_tokens": 2,
                         "temperature": 1.0, "runs": 3, "seed": 0})
    drive.run(NoReset, case, RunContext())  # type: ignore[arg-type]
    assert seen == [0, 0, 0]


def test_a_timed_call_that_changes_the_shared_large_inputs_is_caught_within_eight_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The large case's q and p are shared by every call in the child; the first call compares
    all of them, each later one every 8th row in turn. A change to any one row (here the last,
    made on the 3rd call and kept) is reported by one of the next 8 calls, and a change made on
    the first call is reported at once."""
    import itertools
    from types import SimpleNamespace

    from lab.exercises.spec_verify import drive
    from lab.grader.api import Case, RunContext
    from lab.reference.spec_verify import verify_batch

    b, k, v = 16, 2, 64
    case = Case("L3-large-vocab", 3, {"kind": "large", "B": b, "k": k, "V": v, "seed": 77})
    calls = itertools.count()

    def spoil_on(n: int, row: int) -> SimpleNamespace:
        def verify(x: torch.Tensor, q: torch.Tensor, p: torch.Tensor, g: torch.Generator) -> object:
            if next(calls) == n:
                p[row, 0, 0] += 1e-3
            return verify_batch(x, q, p, g)
        return SimpleNamespace(verify_batch=verify)

    for first_call, row in ((0, 5), (2, b - 1)):
        inputs.large_inputs.cache_clear()
        drive._large_kept.cache_clear()
        monkeypatch.setattr(drive, "_large_calls", itertools.count())
        calls = itertools.count()
        solution = spoil_on(first_call, row)
        touched = [drive.run(solution, case, RunContext(seed=100 + i))["touched"]
                   for i in range(first_call + 1 + 8)]
        assert all(t == [] for t in touched[:first_call]), touched
        assert ["p"] in touched[first_call:first_call + 8], touched
    inputs.large_inputs.cache_clear()
    drive._large_kept.cache_clear()
