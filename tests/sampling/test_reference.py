"""The sampling reference against itself and its grader: batch = rows, variants = contract,
the level-3 power figures as stated, and the level-4 model's logits a function of the sequence
alone (what makes "equal to the reference for the same seeds" fair)."""

from __future__ import annotations

import random

import pytest
import torch

from lab.exercises.sampling import inputs
from lab.exercises.sampling.grading import level3, variants
from lab.reference import sampling as ref


def _batch(rng: random.Random, trial: int) -> tuple[torch.Tensor, list, list, list]:
    b, v = rng.choice([1, 3, 8]), rng.choice([2, 7, 50, 1000])
    x = torch.randn(b, v, generator=torch.Generator().manual_seed(trial)) * rng.choice([1, 3, 10])
    if rng.random() < 0.3:
        x = (x * 2).round() / 2  # ties
    if rng.random() < 0.2:
        x[0, : v // 2] = float("-inf")
    if rng.random() < 0.1:
        x[-1] = float("-inf")
    params = [inputs.random_params(rng) for _ in range(b)]
    prompts = [[rng.randrange(v) for _ in range(rng.randrange(5))] for _ in range(b)]
    outputs = [[rng.randrange(v) for _ in range(rng.randrange(8))] for _ in range(b)]
    return x, params, prompts, outputs


@pytest.mark.slow
def test_batch_equals_rows_bit_for_bit() -> None:
    rng = random.Random(2)
    for trial in range(150):
        x, params, prompts, outputs = _batch(rng, trial)
        got = ref.process_batch(x, params, prompts, outputs)
        for r in range(x.shape[0]):
            want = ref.process_logits(x[r], params[r], prompts[r], outputs[r])
            assert torch.equal(got[r], want), (trial, r, params[r])


def test_variants_without_bug_equal_the_reference() -> None:
    """The bug-naming twin computes the contract itself when no bug is switched on."""
    rng = random.Random(3)
    for trial in range(80):
        x, params, prompts, outputs = _batch(rng, trial)
        for r in range(x.shape[0]):
            assert torch.equal(variants.process(x[r], params[r], prompts[r], outputs[r]),
                               ref.process_logits(x[r], params[r], prompts[r], outputs[r]))


def test_every_bug_changes_some_level1_case() -> None:
    """A bug no case can tell from the contract would be a dead entry in the message table."""
    from lab.exercises.sampling.grading import level1

    cases = level1.cases(0)
    for bug in variants.BUGS:
        assert any(not torch.equal(variants.process(*inputs.row_inputs(c.params, "cpu"), bug),
                                   variants.process(*inputs.row_inputs(c.params, "cpu")))
                   for c in cases), bug


def test_sample_greedy_draws_nothing_and_rows_are_independent() -> None:
    x = torch.randn(3, 20, generator=torch.Generator().manual_seed(0))
    params = [{"temperature": 0.0}, {}, {"top_k": 5}]
    gens = [torch.Generator().manual_seed(s) for s in (1, 2, 3)]
    first = ref.sample(x, params, [[]] * 3, [[]] * 3, gens)
    assert first[0] == int(x[0].argmax())
    assert torch.equal(gens[0].get_state(), torch.Generator().manual_seed(1).get_state())
    alone = ref.sample(x[1:2], params[1:2], [[]], [[]], [torch.Generator().manual_seed(2)])
    assert alone == first[1:2]


def test_power_figures_are_the_computed_ones() -> None:
    """The statement's and the cases' power figures are power_table()'s."""
    table = level3.power_table()
    assert table.keys() == level3.POWER.keys()
    for name, figures in table.items():
        assert figures.keys() == level3.POWER[name].keys(), name
        for bug, p in figures.items():
            assert abs(p - level3.POWER[name][bug]) < 1e-3, (name, bug, p)
        assert min(figures.values()) >= 0.99, name


@pytest.mark.slow
def test_model_logits_depend_on_the_sequence_alone() -> None:
    """Level 4's fairness: a sequence's logits are the same alone, in a batch, after other
    prefixes were asked, or in a fresh wrapper."""
    from lab.exercises.sampling import lm

    torch.set_num_threads(1)
    a, b = lm.shipped("cpu"), lm.shipped("cpu")
    s1, s2 = [317, 288, 80, 80, 9], [5, 6, 7]
    alone = a.next_logits([s1])[0]
    b.next_logits([s1[:3]])  # a different history of prefixes
    together = b.next_logits([s2, s1, s1[:4]])
    assert torch.equal(alone, together[1])
    assert torch.equal(a.next_logits([[*s1, 4]])[0], b.next_logits([[*s1, 4]])[0])
