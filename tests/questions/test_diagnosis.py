"""The diagnosis cases observed in use, each pinned: named mistakes are rejected and named, counted
answers are whole numbers, the accepted range is shown, bits and per-token prices are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.answers import Reask, check_answer, parse_answer, parse_choice
from questions.formula import compile_formula
from questions.model import LabLink, Mistake, Question, Tolerance
from tests.questions.conftest import builtin_bank

BANK = builtin_bank()


def _q(qid: str) -> Question:
    question = BANK.get(qid)
    assert question is not None, qid
    return question


def test_latency_001_five_point_two_is_the_double_counted_first_token() -> None:
    """TTFT 200 ms, TPOT 50 ms, 100 tokens: 5.2 used to show 'Right answer 5.15 s'."""
    instance = _q("latency-001").instance({"ttft": 200, "tpot": 50, "n": 100})
    assert instance.answer == pytest.approx(5.15)
    outcome = check_answer(instance, "5.2")
    assert outcome.graded and not outcome.correct
    assert outcome.mistake_id == "double-count-first-token"
    assert outcome.diagnosis == ("5.2 s is what you get if you added a full TPOT for the first "
                                 "token as well as TTFT")
    assert outcome.accepted == "accepted 5.14–5.16 s"
    right = check_answer(instance, "5.15 s")
    assert right.correct and right.mistake_id is None and right.accepted == outcome.accepted


def test_the_accepted_range_always_shows_its_width() -> None:
    """Seed 0 of latency-001 (3.32 s, ±0.25%) used to say 'accepted 3.32–3.32 s', as if only
    3.32 were right; the range is shown at the precision where its two ends differ."""
    outcome = check_answer(_q("latency-001"), "3.35")
    assert outcome.accepted == "accepted 3.312–3.328 s"
    assert check_answer(_q("latency-001"), "3.328").correct
    assert not check_answer(_q("latency-001"), "3.329").correct


@pytest.mark.parametrize(("qid", "mistake"), [
    ("latency-001", "double-count-first-token"),  # was accepted on 308/308 draws
    ("latency-002", "divide-by-n"),  # 308/308
    ("latency-004", "linear-split"),  # 146/304
    ("prefix-caching-001", "share-of-prompt"),  # 74/308
    ("metering-003", "cached-free"),  # 45/308
])
def test_the_five_named_mistakes_are_rejected_on_every_draw(qid: str, mistake: str) -> None:
    question = _q(qid)
    named = next(m for m in question.mistakes if m.id == mistake)
    for seed in range(308):
        instance = question.draw(seed)
        value = dict((m.id, v) for m, v in instance.mistake_values())[named.id]
        outcome = check_answer(instance, repr(value))
        if outcome.reask:  # answer and mistake agree at the digits typed: more digits decide
            assert outcome.message.endswith("type more digits"), outcome.message
            outcome = check_answer(instance, f"{value:#.6g}")
        assert not outcome.correct, (qid, seed, value, instance.answer)
        assert outcome.mistake_id == mistake, (qid, seed, outcome)


def test_fleet_005_counts_gpus_rounding_up_and_a_fraction_is_reasked() -> None:
    question = _q("fleet-005")
    assert question.round == "up"
    instance = next(i for i in map(question.draw, range(500)) if i.answer == 96)
    outcome = check_answer(instance, "95.9")
    assert outcome.reask and "whole number of GPUs" in outcome.message
    below = check_answer(instance, "95")
    assert not below.correct and below.mistake_id == "rounded-down"
    assert check_answer(instance, "96 GPUs").correct
    assert check_answer(instance, "96").accepted == "accepted 96 GPUs"


def _counted(answer: str) -> Question:
    return Question(
        id="t-gpus", topic="t", kind="numeric", prompt="How many GPUs?", explanation="!",
        lab=LabLink("kv-bytes", 1), difficulty=1, source=Path("t.toml"), unit="GPUs",
        tolerance=Tolerance(abs=0.5), answer=compile_formula(answer), round="up",
        mistakes=(Mistake("rounded-down", compile_formula(f"floor({answer})"), "rounded down"),),
    )


@pytest.mark.parametrize(("answer", "expected"), [("0.2", 1), ("1", 1), ("0", 0), ("95.2", 96)])
def test_half_a_gpu_is_never_graded_for_a_count(answer: str, expected: int) -> None:
    """abs = 0.5 used to accept 0.5 for an answer of 1 GPU and for one of 0."""
    instance = _counted(answer).draw(0)
    assert instance.answer == expected
    assert check_answer(instance, "0.5").reask
    assert check_answer(instance, str(expected)).correct
    assert not check_answer(instance, str(expected + 1)).correct


def test_float_noise_does_not_push_a_count_across_a_whole_number() -> None:
    assert _counted("0.1 * 3 * 10").draw(0).answer == 3  # 3.0000000000000004, not 4


def test_the_tolerance_is_shown_and_a_near_miss_says_how_far_off() -> None:
    """'1.8B' for 1,839,600,000 used to be 'Not quite' with no hint of how close was close."""
    instance = _q("fleet-001").instance({"tps": 700})
    assert instance.answer == 1_839_600_000
    outcome = check_answer(instance, "1.8B")
    assert not outcome.correct
    assert outcome.accepted == "accepted 1,831,000,000–1,848,000,000 tokens"
    assert outcome.hint == "2.2% too low"
    slip = check_answer(instance, "1.8396M")
    assert slip.hint is not None and "1,000×" in slip.hint  # a units slip keeps its hint


@pytest.mark.parametrize(("text", "unit", "value"), [
    ("268,000 Mb/s", "Gb/s", 268.0), ("268,000 Mb/s", "GB/s", 33.5), ("8 Kb/s", "B/s", 1000.0),
    ("8 kb/s", "B/s", 1000.0), ("8 b/s", "B/s", 1.0), ("8 bps", "B/s", 1.0),
    ("8 Mbps", "MB/s", 1.0), ("8 Tb/s", "TB/s", 1.0), ("1 kB/s", "B/s", 1000.0),
    ("8 kb", "B", 1000.0), ("8 Kbit/s", "B/s", 1000.0),
])
def test_the_bits_family_is_bits_not_bytes(text: str, unit: str, value: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5 mb/s", "5 gb/s", "5 tb/s"])
def test_all_lower_case_bit_or_byte_rates_are_reasked(text: str) -> None:
    with pytest.raises(Reask, match="ambiguous"):
        parse_answer(text, "GB/s")


@pytest.mark.parametrize("text", [
    "$1.70/M", "$1.7 per 1M tokens", "1.70 $/1M tokens", "$1.70",
    "$0.0017 per 1K tokens", "0.0017 $ per 1K tokens", "170 cents/1M", "170 cents per 1M tokens",
    "170 cents", "USD 1.7 per million tokens", "$1.70/Mtok", "$1.7/M tokens", "$0.0000017/token",
    "1.7 $/M",
])
def test_prices_per_token_quantity_are_read(text: str) -> None:
    assert parse_answer(text, "$/1M tokens") == pytest.approx(1.7)


def test_a_price_is_not_an_amount() -> None:
    with pytest.raises(Reask, match="amount of money"):
        parse_answer("$1.70/M", "$")
    assert parse_answer("$1.7M", "$") == pytest.approx(1.7e6)  # an amount, not a price


def test_a_price_question_shows_its_range_per_quantity() -> None:
    outcome = check_answer(_q("metering-008").draw(0), "$0.01/M")
    assert outcome.accepted.startswith("accepted $") and outcome.accepted.endswith("/1M tokens")


@pytest.mark.parametrize("text", ["²", "①", "٣", "b²"])
def test_mcq_odd_digits_are_reasked_not_crashing(text: str) -> None:
    with pytest.raises(Reask):
        parse_choice(text)
    outcome = check_answer(_q("latency-005").draw(0), text)
    assert outcome.reask


def test_mcq_accepts_a_letter_a_position_and_the_choice_text() -> None:
    instance = _q("latency-005").draw(3)
    key = instance.correct_index
    assert key is not None
    for typed in ("ABCD"[key], "abcd"[key], str(key + 1), f"({'abcd'[key]})",
                  instance.choices[key], "  " + instance.choices[key].lower() + " "):
        outcome = check_answer(instance, typed)
        assert outcome.correct and outcome.chosen_index == key, typed
        assert outcome.expected_display.startswith(f"{'ABCD'[key]}) ")
