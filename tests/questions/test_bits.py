"""Bits are not bytes: '400 Gb' on a GB question is 50 GB, and sloppy 'gb' is re-asked."""

from __future__ import annotations

import pytest

from questions.answers import Reask, parse_answer


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [("400 Gb", "GB", 50.0), ("8 Mbit", "MB", 1.0), ("16 bits", "B", 2.0), ("8 GB", "GB", 8.0)],
)
def test_bit_units_convert_to_bytes(text: str, unit: str, expected: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["8 gb", "5 mb"])
def test_lower_case_byte_or_bit_is_reasked(text: str) -> None:
    with pytest.raises(Reask, match="ambiguous"):
        parse_answer(text, "GB")
