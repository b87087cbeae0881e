"""Counted units in verdicts: a verdict said "you: 1 seats"; one of a counted unit is singular."""

from __future__ import annotations

from questions.units import format_quantity


def test_one_of_a_counted_unit_is_singular_and_more_stay_plural() -> None:
    assert format_quantity(1, "seats") == "1 seat"
    assert format_quantity(1.0, "GPUs") == "1 GPU"
    assert format_quantity(1, "tokens") == "1 token"
    assert format_quantity(2, "seats") == "2 seats"
    assert format_quantity(1.5, "requests") == "1.5 requests"
    assert format_quantity(1, "KiB") == "1 KiB"
