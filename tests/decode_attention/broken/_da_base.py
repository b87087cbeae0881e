"""Broken kernels of this folder: `lab/reference/decode_attention.py` mutated by exact text
substitutions (`tests/mutants.py`); `tests/decode_attention/conftest.py` writes one out as a
standalone file before importing it (@triton.jit reads a kernel's source from its file)."""

from __future__ import annotations

import types
from pathlib import Path

from tests import mutants

NAMES = ("softmax", "decode_attention", "paged_decode_attention", "split_partials", "combine",
         "flash_decode")


def mutate(name: str, *replacements: tuple[str, str]) -> types.ModuleType:
    return mutants.mutate_reference("decode_attention.py",
                                    Path(__file__).with_name(f"{name}.py"), replacements)


def export(module: types.ModuleType, namespace: dict[str, object]) -> None:
    mutants.export(module, namespace, NAMES)
