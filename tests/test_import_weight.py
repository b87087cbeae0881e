"""The CLI and the app's first paint must not pay for torch/transformers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    return set(out.split())


def test_import_cli_does_not_import_torch_or_transformers() -> None:
    loaded = _modules_after("import trainer.cli")
    assert not [m for m in HEAVY if m in loaded]


def test_dojo_help_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom trainer.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\nassert r.exit_code == 0, r.output\n"
        "assert 'Serving Dojo' in r.output"
    )
    loaded = _modules_after(code)
    assert not [m for m in HEAVY if m in loaded]
