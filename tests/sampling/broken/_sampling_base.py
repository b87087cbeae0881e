"""Build a broken solution from the reference by exact text substitutions.

The sandbox refuses imports of lab.reference, so the reference's source is read as text, each
`(old, new)` replacement is applied (it must occur exactly once, so a reference edit that moves
the code fails loudly here instead of silently testing nothing), and the result is executed as
a fresh module named after the broken file. `export` also leaves the mutated source in the
broken module (`MUTATED_SOURCE`), so a test can write it out as a standalone solution file
(`tests/sampling/conftest.py: materialize`) for a sandbox that hides lab/reference from the child.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[3] / "lab" / "reference" / "sampling.py"


def mutate(name: str, *replacements: tuple[str, str]) -> types.ModuleType:
    source = REFERENCE.read_text(encoding="utf-8")
    for old, new in replacements:
        count = source.count(old)
        if count != 1:
            raise RuntimeError(f"{name}: expected exactly one {old!r} in the reference, "
                               f"found {count}")
        source = source.replace(old, new)
    module = types.ModuleType(f"_broken_{name}")
    module.__file__ = str(Path(__file__).with_name(f"{name}.py"))
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    module.MUTATED_SOURCE = source  # type: ignore[attr-defined]
    return module


def export(module: types.ModuleType, namespace: dict[str, object]) -> None:
    """Expose the solution's public names in the broken file's own module."""
    for name in ("process_logits", "process_batch", "sample", "generate", "MUTATED_SOURCE"):
        namespace[name] = getattr(module, name)
