"""The sims for the screens: the catalogue of what-if calculators (`lab.sims`), the error a dial
raises and how a value is written back into a dial. Screens reach the lab only through
`trainer.core` (an import-linter contract); the sims themselves stay pure functions in `lab`."""

from __future__ import annotations

from lab.sims import SIMS, SimInputError
from lab.sims.report import format_value

__all__ = ["SIMS", "SimInputError", "format_value"]
