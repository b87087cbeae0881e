"""Broken engines of this folder: `lab/reference/batch_engine.py` mutated by exact text
substitutions (`tests/mutants.py`). The mutated source is also kept in `SOURCES` so tests that
grade through the sandbox (where lab/reference is not readable) can write it out as a standalone
file (`conftest.materialize`).
"""

from __future__ import annotations

import types
from pathlib import Path

from tests import mutants

SOURCES: dict[str, str] = {}  # broken file name -> its mutated reference source


def mutate(name: str, *replacements: tuple[str, str]) -> types.ModuleType:
    module = mutants.mutate_reference("batch_engine.py", Path(__file__).with_name(f"{name}.py"),
                                      replacements)
    SOURCES[name] = module.MUTATED_SOURCE
    return module
