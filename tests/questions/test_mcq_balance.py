"""The built-in MCQs cannot be answered by test-taking tells instead of knowledge.

A learner who always picks the longest choice, the only choice with a number, or "all of the
above" should score no better than chance. Lengths are measured on the rendered choices (as the
learner sees them) in characters; a key up to 1.3x the longest distractor is "similar length",
and across the bank the key may be the longest (or the shortest) choice in at most 35% of MCQs,
so the length heuristic wins little more than the 25% a random pick gets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from questions.model import Question
from tests.questions.conftest import builtin_bank

MAX_KEY_RATIO = 1.3
MAX_EXTREME_SHARE = 0.35
SEEDS = range(4)  # parameterised MCQs render different choices per draw
GIVEAWAY = re.compile(r"\b(all|none|both|neither) of (the above|these|them)\b", re.I)


def _mcqs() -> list[Question]:
    bank = builtin_bank()
    assert not bank.errors, [str(p) for p in bank.errors]
    return [q for q in bank.questions if q.kind == "mcq"]


MCQS = _mcqs()


def key_ratio(choices: Sequence[str], correct: int) -> float:
    """Length of the key over the length of the longest distractor."""
    longest_distractor = max(len(c) for i, c in enumerate(choices) if i != correct)
    return len(choices[correct]) / longest_distractor


def shortest_ratio(choices: Sequence[str], correct: int) -> float:
    """Length of the key over the length of the shortest distractor."""
    return len(choices[correct]) / min(len(c) for i, c in enumerate(choices) if i != correct)


def lone_number_is_key(choices: Sequence[str], correct: int) -> bool:
    """True when the key is the only choice that contains a digit (a concreteness tell)."""
    with_digits = [i for i, c in enumerate(choices) if re.search(r"\d", c)]
    return with_digits == [correct]


def _rendered(q: Question) -> list[tuple[list[str], int]]:
    out = []
    for seed in SEEDS:
        inst = q.draw(seed)
        assert inst.correct_index is not None
        out.append((list(inst.choices), inst.correct_index))
    return out


def test_the_bank_has_mcqs_to_check() -> None:
    assert len(MCQS) >= 40


@pytest.mark.parametrize("q", MCQS, ids=lambda q: q.id)
def test_key_is_not_much_longer_than_every_distractor(q: Question) -> None:
    for choices, correct in _rendered(q):
        ratio = key_ratio(choices, correct)
        assert ratio <= MAX_KEY_RATIO, f"{q.id}: key is {ratio:.2f}x the longest distractor"


@pytest.mark.parametrize("q", MCQS, ids=lambda q: q.id)
def test_choices_are_distinct_and_free_of_giveaways(q: Question) -> None:
    for choices, correct in _rendered(q):
        normalised = {" ".join(c.lower().split()).rstrip(".") for c in choices}
        assert len(normalised) == len(choices), f"{q.id}: duplicated choice"
        assert not any(GIVEAWAY.search(c) for c in choices), f"{q.id}: all/none-of-the-above"
        assert not lone_number_is_key(choices, correct), f"{q.id}: only the key has a number"


def test_key_is_rarely_the_longest_or_the_shortest_choice() -> None:
    as_written = {q.id: _rendered(q)[0] for q in MCQS}
    longest = [i for i, (cs, k) in as_written.items() if key_ratio(cs, k) > 1]
    shortest = [i for i, (cs, k) in as_written.items() if shortest_ratio(cs, k) < 1]
    assert len(longest) <= MAX_EXTREME_SHARE * len(MCQS), f"key is the longest in {longest}"
    assert len(shortest) <= MAX_EXTREME_SHARE * len(MCQS), f"key is the shortest in {shortest}"


def test_the_rules_catch_the_tells_they_target() -> None:
    padded_key = [
        "They have opposite bottlenecks (compute vs memory bandwidth) and interfere when "
        "colocated; separate pools remove the interference and let each phase be tuned alone",
        "It reduces the total bytes of KV cache that must be stored",
        "It removes the need for a KV cache on the decode side",
        "Decode cannot run on the GPU that computed the KV cache",
    ]
    assert key_ratio(padded_key, 0) > MAX_KEY_RATIO
    assert lone_number_is_key(["About 210 ms", "Unbounded", "Immediately", "Never"], 0)
    assert not lone_number_is_key(["About 210 ms", "At most 10 ms", "Zero", "Never"], 0)
    assert GIVEAWAY.search("All of the above")
    assert GIVEAWAY.search("none of these")
