"""Broken solutions of this folder: `lab/reference/sampling.py` mutated by exact text
substitutions (`tests/mutants.py`); `tests/sampling/conftest.py`
materializes one as a standalone file."""

from __future__ import annotations

import types
from pathlib import Path

from tests import mutants

NAMES = ("process_logits", "process_batch", "sample", "generate")


def mutate(name: str, *replacements: tuple[str, str]) -> types.ModuleType:
    return mutants.mutate_reference("sampling.py", Path(__file__).with_name(f"{name}.py"),
                                    replacements)


def export(module: types.ModuleType, namespace: dict[str, object]) -> None:
    """Expose the solution's public names in the broken file's own module."""
    mutants.export(module, namespace, NAMES)
