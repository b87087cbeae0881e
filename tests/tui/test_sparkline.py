"""The weekly retention line maps rates to block heights and marks empty weeks."""

from __future__ import annotations

from trainer.screens.stats import _sparkline


def test_sparkline_maps_rates_and_gaps() -> None:
    assert _sparkline([None, 0.0, 0.5, 1.0]) == "·▁▅█"
