"""Broken solutions built from a reference by exact text substitutions (one shared way).

The sandbox refuses imports of lab.reference, so the reference's source is read as text, each
`(old, new)` replacement is applied (it must occur exactly once, so a reference edit that moves
the code fails loudly here instead of silently testing nothing), and the result is executed as
a fresh module named after the broken file. The mutated source stays in the module
(`MUTATED_SOURCE`), so a test can write it out as a standalone solution file for a sandbox that
hides lab/reference from the child (each exercise's `conftest.materialize`).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from pathlib import Path

REFERENCES = Path(__file__).resolve().parents[1] / "lab" / "reference"


def mutate_reference(reference: str, broken: Path,
                     replacements: Iterable[tuple[str, str]]) -> types.ModuleType:
    """`lab/reference/<reference>` with `replacements` applied, as the module of `broken`."""
    name = broken.stem
    source = (REFERENCES / reference).read_text(encoding="utf-8")
    for old, new in replacements:
        count = source.count(old)
        if count != 1:
            raise RuntimeError(f"{name}: expected exactly one {old!r} in the reference, "
                               f"found {count}")
        source = source.replace(old, new)
    module = types.ModuleType(f"_broken_{name}")
    module.__file__ = str(broken)
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    module.MUTATED_SOURCE = source  # type: ignore[attr-defined]
    return module


def export(module: types.ModuleType, namespace: dict[str, object], names: Iterable[str]) -> None:
    """Expose the solution's public names (and its mutated source) in the broken file's own
    module."""
    for name in (*names, "MUTATED_SOURCE"):
        namespace[name] = getattr(module, name)


def load_solution(path: Path) -> types.ModuleType:
    """Import a solution file the way the sandbox does (its folder on sys.path)."""
    import importlib.util

    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(f"_solution_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def materialize(broken: Path, target: Path) -> Path:
    """A broken file written out as the standalone solution `target` (the reference's text with
    its mutations): the sandbox child cannot read lab/reference, so it must not build it there."""
    source = load_solution(broken).MUTATED_SOURCE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    return target
