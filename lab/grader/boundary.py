"""Where the judge ends: what the sandbox child may import, and which files it must not see.

The child gets the sandbox machinery, `lab.grader.api`, the exercise's `drive` module and the
modules that `drive.CHILD_MODULES` lists (plus their parent packages). Everything else under the
guarded roots — `lab`, the exercise's package, the reference — is refused by the child's import
guard, and where mount namespaces work its `.py` files are hidden behind empty mounts as well.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAB_DIR = Path(__file__).resolve().parents[1]
REFERENCE_DIR = LAB_DIR / "reference"
# what lab.grader.sandbox itself imports before any learner code runs
SANDBOX_MODULES = (
    "lab", "lab.grader", "lab.grader.sandbox", "lab.grader.codec", "lab.grader.confine",
    "lab.grader.protocol", "lab.grader.signal_guard", "lab.grader.api", "lab.grader.timing",
    "lab.grader.gpu_timing", "lab.grader.root", "lab.grader.landlock", "lab.grader.limits",
)


@dataclass
class Boundary:
    drive: str  # module the child loads to call the learner's code
    reference: str
    roots: list[str]
    allowed: dict[str, str | None]  # module name -> its file (None for namespace packages)
    guarded_paths: list[str]
    reference_paths: list[str]
    hide: list[str] = field(default_factory=list)

    def load_message(self, *, trusted: bool) -> dict[str, Any]:
        return {"op": "load", "drive": self.drive, "reference": self.reference,
                "trusted": trusted, "roots": self.roots, "allowed": self.allowed,
                "guarded_paths": self.guarded_paths, "reference_paths": self.reference_paths}

    def hidden(self, *, trusted: bool) -> list[str]:
        """Paths to mount over in the child (none for the grader's own reference child)."""
        return [] if trusted else self.hide


def _origin(name: str) -> str | None:
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ImportError(f"no module {name}")
    return str(Path(spec.origin).resolve()) if spec.origin and spec.has_location else None


def _with_parents(names: list[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            out.append(".".join(parts[:i]))
    return list(dict.fromkeys(out))


def _module_file(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin).resolve() if spec and spec.origin and spec.has_location else None


def child_modules(drive_name: str) -> tuple[str, ...]:
    """The drive's CHILD_MODULES, read from its source when it is a literal there: importing
    the drive (torch: seconds) would hold up the child the grading starts meanwhile. A drive that
    computes the list is imported."""
    origin = _origin(drive_name)
    if origin is not None and origin.endswith(".py"):
        tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "CHILD_MODULES":
                with contextlib.suppress(ValueError, TypeError, SyntaxError):
                    value = ast.literal_eval(node.value) if node.value is not None else ()
                    if isinstance(value, tuple | list) and all(isinstance(v, str)
                                                               for v in value):
                        return tuple(value)
                break
        else:
            return ()  # no CHILD_MODULES at module level
    return tuple(getattr(importlib.import_module(drive_name), "CHILD_MODULES", ()))


def compute(exercise_module: str, reference: str) -> Boundary:
    """The boundary for one exercise (the drive's CHILD_MODULES are read here, in the trusted
    parent, without importing it when they are a literal)."""
    drive_name = f"{exercise_module}.drive"
    extra = [drive_name, *child_modules(drive_name)]
    names = _with_parents([*SANDBOX_MODULES, *extra])
    allowed = {n: _origin(n) for n in names}
    reference_file = _module_file(reference)
    exercise_dir = Path(importlib.import_module(exercise_module).__file__ or "").parent
    guarded = [str(LAB_DIR), str(exercise_dir)]
    reference_paths = [str(REFERENCE_DIR)] + ([str(reference_file)] if reference_file else [])
    allowed_files = {Path(f) for f in allowed.values() if f}
    hide = [str(REFERENCE_DIR)]
    if reference_file and REFERENCE_DIR not in reference_file.parents:
        hide.append(str(reference_file))
    for root in (LAB_DIR, exercise_dir):
        for py in sorted(root.rglob("*.py")):
            if (py not in allowed_files and REFERENCE_DIR not in py.parents
                    and str(py) not in hide):
                hide.append(str(py))
    return Boundary(drive=drive_name, reference=reference, roots=["lab", exercise_module,
                    reference], allowed=allowed, guarded_paths=guarded,
                    reference_paths=reference_paths, hide=hide)
