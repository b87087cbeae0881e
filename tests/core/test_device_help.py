"""Every `--device` says what its choices do (the walkthrough read "--device
[auto|cpu|cuda]  [default: auto]" and nothing more in `dojo lab grade --help`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainer.cli import main


@pytest.mark.parametrize("command", [["lab", "grade"], ["lab", "watch"], ["mock", "grade"]])
def test_device_help_names_what_auto_and_cuda_do(command: list[str]) -> None:
    out = CliRunner().invoke(main, [*command, "--help"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "auto is cuda when torch sees a GPU, else cpu" in text, text
    assert "cuda refuses a machine without one" in text, text
