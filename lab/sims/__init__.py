"""Headless sims: serving capacity, metering and fleet buying, each with formulas and checks.

`SIMS` maps a sim's name to its instance; `sim.evaluate({...})` returns a `SimResult`. Pure
Python (no torch), shared by the `dojo sim` command, the TUI screens and the tests.
"""

from __future__ import annotations

from lab.sims.base import (
    Check,
    InputSpec,
    Output,
    Preset,
    Sim,
    SimInputError,
    SimResult,
    Value,
)
from lab.sims.capacity import CapacitySim
from lab.sims.fleet import FleetSim
from lab.sims.metering import MeteringSim

SIMS: dict[str, Sim] = {sim.name: sim for sim in (CapacitySim(), MeteringSim(), FleetSim())}

__all__ = [
    "SIMS",
    "Check",
    "InputSpec",
    "Output",
    "Preset",
    "Sim",
    "SimInputError",
    "SimResult",
    "Value",
]
