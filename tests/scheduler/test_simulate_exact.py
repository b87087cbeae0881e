"""The plan's simulation gives, number for number, the forecasts the step-by-step simulation
(each answer through `next_states.next_state` and `fsrs`'s `review_card`) gave for 64 seeded
random cases (`plan_cases`, expected values in `simulate_expected.json`, written before the fast
path): every day's answers and minutes, the lab minutes, the days that introduce cards and
each topic's recall and share on the interview day. A change of one answer anywhere moves them."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from tests.scheduler.plan_cases import SEEDS, as_data, case

EXPECTED = json.loads((Path(__file__).parent / "simulate_expected.json").read_text())


@pytest.mark.parametrize("seed", SEEDS)
def test_the_simulation_gives_the_reference_forecast(seed: int) -> None:
    assert as_data(case(seed).forecast()) == EXPECTED[str(seed)]


def test_the_cases_cover_both_schedulers_budgets_and_introductions() -> None:
    cases = [case(seed) for seed in SEEDS]
    assert {c.settings.scheduler for c in cases} == {"sm2", "fsrs"}
    assert any(c.budget is None for c in cases) and any(c.budget is not None for c in cases)
    assert sum(EXPECTED[str(s)]["intro_days"] > 0 for s in SEEDS) >= 20


def test_another_seed_or_one_card_changed_gives_another_forecast() -> None:
    """The comparison can fail: the same case with the simulation's seed moved, or one card's
    memory half as stable, is not the reference."""
    base = case(11)
    assert as_data(replace(base, seed=base.seed + 1).forecast()) != EXPECTED["11"]
    rng = random.Random(3)
    n = rng.choice([k for k, c in enumerate(base.cards) if c.memory is not None])
    card = base.cards[n]
    assert card.memory is not None
    older = replace(card, memory=replace(card.memory, stability=card.memory.stability * 0.5))
    cards = [*base.cards[:n], older, *base.cards[n + 1:]]
    assert as_data(replace(base, cards=cards).forecast()) != EXPECTED["11"]
