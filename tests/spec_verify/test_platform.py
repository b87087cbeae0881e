"""spec-verify through the real platform: sandboxed learner process, `dojo lab grade`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.spec_verify.harness import BROKEN_DIR

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # ~30 s: a sandbox child, and the shipped pair loaded
def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("spec-verify", get("spec-verify").stub_path, 1,
                       match=r"not implemented", kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.slow  # ~30 s: a sandbox child, and the shipped pair loaded
def test_broken_file_fails_in_the_sandbox_with_the_bug_named() -> None:
    assert_fails("spec-verify", BROKEN_DIR / "l1_off_by_one_row.py", 1,
                 match=r"off-by-one logits row")


@pytest.mark.slow
def test_cli_grades_level_4_and_reports_alpha_and_tau(tmp_path: Path) -> None:
    """Every greedy level-4 case reports the learner's α̂ and τ next to the formula's prediction
    (in the JSON stream; the text report does not print passing cases' figures yet)."""
    sol = reference_as_solution("spec-verify", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "trainer", "lab", "grade", "spec-verify", "--level", "4",
         "--file", str(sol), "--device", "cpu", "--seed", "5", "--json"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=900, check=False,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = {e["case"]: e["metrics"] for e in events if e["event"] == "case_passed"}
    shipped = metrics["L4-shipped-metrics"]
    assert {"alpha", "tau", "tau_formula", "target_passes_per_token"} <= set(shipped)
    assert 0 <= shipped["alpha"] <= 1 and 1 <= shipped["tau"] <= 5
    assert shipped["target_passes_per_token"] <= 1.05
    # τ measured on a real loop agrees with (1 − α^(k+1))/(1 − α) within noise on long runs
    k4 = metrics["L4-greedy-k4"]
    assert abs(k4["tau"] - k4["tau_formula"]) < 0.5
    timed = next(e for e in events if e["event"] == "metrics" and e["case"] == "L4-shipped-timed")
    assert "median_ratio" in timed["metrics"]


@pytest.mark.slow
def test_reference_passes_levels_1_and_5_in_the_sandbox_including_the_shipped_pair(
        tmp_path: Path) -> None:
    """Both levels in one grading (one child, one load of the shipped pair)."""
    run = assert_passes("spec-verify", reference_as_solution("spec-verify", tmp_path),
                        level=[1, 5], seed=11)
    assert [(lvl.level, lvl.passed) for lvl in run.result.levels] == [(1, True), (5, True)]
    metrics = {e["case"]: e["metrics"] for e in run.events if e["event"] == "case_passed"}
    tree = metrics["L5-generate-shipped-w3-d4"]
    assert tree["tree_tokens_per_pass"] >= tree["chain_tokens_per_pass"] - 1e-9
