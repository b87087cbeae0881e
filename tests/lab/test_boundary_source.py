"""The boundary reads a drive's CHILD_MODULES from its source, so the grader can start the
learner's child before it imports torch itself (importing the drive first held the child back by
a whole torch import: ~3 s of every cold grading)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.exercises import discover
from lab.grader import boundary

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("exercise", [ex.id for ex in discover()])
def test_child_modules_from_the_source_equal_the_imported_ones(exercise: str) -> None:
    ex = next(e for e in discover() if e.id == exercise)
    drive = importlib.import_module(f"{ex.module}.drive")
    assert boundary.child_modules(f"{ex.module}.drive") == tuple(
        getattr(drive, "CHILD_MODULES", ()))


def test_a_computed_list_falls_back_to_importing_the_drive(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    pkg = tmp_path / "computed_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "drive.py").write_text("BASE = ('json',)\nCHILD_MODULES = BASE + ('csv',)\n")
    (tmp_path / "literal_demo").mkdir()
    (tmp_path / "literal_demo" / "__init__.py").write_text("")
    (tmp_path / "literal_demo" / "drive.py").write_text(
        "raise RuntimeError('imported')\nCHILD_MODULES: tuple[str, ...] = ('json',)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert boundary.child_modules("computed_demo.drive") == ("json", "csv")
    assert boundary.child_modules("literal_demo.drive") == ("json",)  # read, never executed


def test_the_boundary_of_a_torch_lab_is_computed_without_importing_torch() -> None:
    code = ("import sys\nfrom lab.grader import boundary\n"
            "boundary.compute('lab.exercises.spec_verify', 'lab.reference.spec_verify')\n"
            "assert 'torch' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr
