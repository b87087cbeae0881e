"""`--target/--draft` let a learner grade on their own local checkpoints, validated up front."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from lab.exercises import discover
from lab.grader.plan import replay_command
from trainer.cli import main

MODELS = Path(__file__).resolve().parents[2] / "lab" / "models"


def test_exercise_that_takes_no_models_refuses_them() -> None:
    result = CliRunner().invoke(main, ["lab", "grade", "kv-bytes", "--file", __file__,
                                       "--target", str(MODELS / "pycode-target")])
    assert result.exit_code == 2
    assert "kv-bytes does not take --target" in result.output


def test_a_folder_without_config_is_a_usage_error(tmp_path: Path) -> None:
    solution = tmp_path / "sv.py"
    shutil.copy(MODELS.parents[1] / "lab" / "exercises" / "spec_verify" / "stub.py", solution)
    result = CliRunner().invoke(main, ["lab", "grade", "spec-verify", "--level", "4",
                                       "--file", str(solution), "--draft", str(tmp_path)])
    assert result.exit_code == 2
    assert "no config.json" in result.output


def test_replay_command_keeps_the_checkpoints() -> None:
    spec = next(ex for ex in discover() if ex.id == "spec-verify")
    assert set(spec.model_roles) == {"target", "draft"}
    cmd = replay_command("spec-verify", [4], 7, spec.level_numbers, {"target": "/m/t"})
    assert cmd == "dojo lab grade spec-verify --level 4 --seed 7 --target /m/t"


def test_watch_with_a_bad_checkpoint_stops_at_once(tmp_path: Path) -> None:
    solution = tmp_path / "sv.py"
    shutil.copy(MODELS.parents[1] / "lab" / "exercises" / "spec_verify" / "stub.py", solution)
    result = CliRunner().invoke(main, ["lab", "watch", "spec-verify", "--file", str(solution),
                                       "--target", str(tmp_path)])
    assert result.exit_code == 2 and "no config.json" in result.output
