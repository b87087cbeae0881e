"""`models` (wired as `dojo lab models`) lists the pairs from recorded figures, torch-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.commands.models import models

ROOT = Path(__file__).resolve().parents[2]


def test_listing_prints_recorded_figures_without_loading_torch() -> None:
    code = (
        "import sys; from click.testing import CliRunner; "
        "from trainer.commands.models import models; "
        "r = CliRunner().invoke(models, []); print(r.output); "
        "sys.exit(r.exit_code or bool({'torch', 'transformers'} & set(sys.modules)))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    for text in ("pycode", "held-out ppl", "greedy alpha", "cost ratio c", "margin"):
        assert text in res.stdout


def test_unknown_pair_is_a_clear_error() -> None:
    res = CliRunner().invoke(models, ["--pair", "nope"])
    assert res.exit_code != 0
    assert "no shipped pair named 'nope'" in res.output


@pytest.mark.slow
def test_measure_recomputes_side_by_side() -> None:
    res = CliRunner().invoke(models, ["--measure", "--windows", "4"])
    assert res.exit_code == 0, res.output
    assert "recorded" in res.output and "measured" in res.output
    assert "greedy alpha" in res.output
