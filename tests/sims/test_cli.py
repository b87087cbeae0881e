"""`dojo sim`: what a learner types and reads, and the errors a typo gets (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sim", *args])
    return result.exit_code, result.output


def test_list_names_every_sim_and_story() -> None:
    code, out = _run("list")
    assert code == 0
    for word in ("capacity", "metering", "fleet", "used-chip-bargain", "shiny-chip-bet",
                 "api-tax", "llama3-70b-8xh100", "[fails idle]"):
        assert word in out


def test_capacity_text_shows_inputs_formulas_outputs_and_checks() -> None:
    code, out = _run("capacity", "--preset", "llama3-8b-h100", "--set", "context=8192")
    assert code == 0, out
    assert " *context" in out and "8,192" in out  # changed dial is marked
    assert "Weights read per step = 16.06 GB ÷ (1 × 3.35 TB/s) = 4.794 ms" in out
    # 8K context: seat = 131,072 × 8,192 = 1 GiB; free = 72 GiB − 16.06e9 B = 57.04 GiB → 57
    assert "Seats = floor(57.04 GiB ÷ (128 KiB × 8,192 tokens = 1 GiB)) = 57" in out
    assert "FAIL  At least 64 seats at 8,192 tokens" in out
    assert "57 seats: 7 seats short of the target of 64 seats" in out
    assert "PASS  TTFT ≤ 0.5 s" in out
    assert "3 of 4 checks pass." in out


def test_fix_dial_from_the_command_line_turns_the_check_green() -> None:
    _, failing = _run("fleet", "--preset", "api-tax")
    assert "FAIL  API overflow ≤ 10% of tokens" in failing
    code, fixed = _run("fleet", "--preset", "api-tax", "--set", "rented_share=100%")
    assert code == 0 and "PASS  API overflow ≤ 10% of tokens" in fixed
    assert "3 of 3 checks pass." in fixed
    # only the dial the learner turned is marked, not the preset's own values
    marked = [line.split()[0] for line in fixed.splitlines() if line.startswith(" *")]
    assert marked == ["*rented_share"]


def test_json_output_is_machine_readable() -> None:
    code, out = _run("metering", "--set", "retry_rate=0.2", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["sim"] == "metering" and data["preset"] is None
    assert data["inputs"]["retry_rate"] == 0.2
    outputs = {o["name"]: o for o in data["outputs"]}
    # 13,417.20 × 1.2 = 16,100.64; retries 1/6 of it
    assert outputs["total"]["value"] == pytest.approx(16100.64)
    assert outputs["retry_share_of_bill"]["value"] == pytest.approx(1 / 6)
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["budget"]["passed"] is False
    assert checks["budget"]["margin"] == pytest.approx(-1100.64)
    assert data["all_passed"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["capacity", "--set", "gpu=2"], "unknown input 'gpu' for sim capacity"),
        (["capacity", "--set", "gpus=two"], "gpus: 'two' is not an integer"),
        (["capacity", "--set", "mfu=150%"], "mfu must be ≤ 1"),
        (["capacity", "--set", "gpus"], "'gpus' is not of the form key=value"),
        (["capacity", "--set", "prompt_tokens=32768"],
         "prompt_tokens + output_tokens (32,768 + 512) is longer than the context (32,768)"),
        (["fleet", "--set", "card=tpu"], "card: 'tpu' is not one of h100, b200, a100"),
        (["fleet", "--preset", "gold-rush"], "unknown preset 'gold-rush' for sim fleet"),
        (["weather"], "unknown sim 'weather'; choose one of: list, capacity, metering, fleet"),
    ],
)
def test_bad_input_is_a_usage_error_with_a_specific_message(args: list[str], message: str) -> None:
    code, out = _run(*args)
    assert code == 2
    assert message in out


def test_help_lists_dials_and_presets() -> None:
    code, out = _run("fleet", "--help")
    assert code == 0
    assert "owned_cards = 18 cards (0..10000000)" in out
    assert "rented_share = 100% of overflow (0%..100%)" in out
    assert "shiny-chip-bet:" in out


@pytest.mark.slow
def test_real_subprocess_python_m_trainer_sim() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "trainer", "sim", "capacity", "--preset", "llama3-70b-8xh100",
         "--set", "kv_bytes=1", "--json"],
        cwd=ROOT, capture_output=True, text=True, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    seats = next(o for o in data["outputs"] if o["name"] == "seats")
    assert seats["value"] == 88  # floor(444.59 GiB / 5 GiB)
    bad = subprocess.run(
        [sys.executable, "-m", "trainer", "sim", "capacity", "--set", "layers=-1"],
        cwd=ROOT, capture_output=True, text=True, env=env, check=False,
    )
    assert bad.returncode == 2 and "layers must be ≥ 1 layers, got -1" in bad.stderr


def test_dojo_help_does_not_import_the_sims() -> None:
    probe = (
        "import sys\nfrom click.testing import CliRunner\nfrom trainer.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\nassert r.exit_code == 0\n"
        "assert 'sim' in r.output\nprint('lab.sims' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, env=env, check=True).stdout
    assert out.strip() == "False"
