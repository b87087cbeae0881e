"""Build a broken engine from the reference by exact text substitutions.

The reference's source is read as text, each `(old, new)` replacement is applied (it must occur
exactly once, so a reference edit that moves the code fails loudly here instead of silently testing
nothing), and the result is executed as a fresh module named after the broken file. The mutated
source is kept in `SOURCES` so tests that grade through the sandbox (where lab/reference is not
readable) can write it out as a standalone file (`conftest.materialize`).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[3] / "lab" / "reference" / "batch_engine.py"
SOURCES: dict[str, str] = {}  # broken file name -> its mutated reference source


def mutate(name: str, *replacements: tuple[str, str]) -> types.ModuleType:
    source = REFERENCE.read_text(encoding="utf-8")
    for old, new in replacements:
        count = source.count(old)
        if count != 1:
            raise RuntimeError(f"{name}: expected exactly one {old!r} in the reference, "
                               f"found {count}")
        source = source.replace(old, new)
    SOURCES[name] = source
    module = types.ModuleType(f"_broken_{name}")
    module.__file__ = str(Path(__file__).with_name(f"{name}.py"))
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module
