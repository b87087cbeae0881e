"""`dojo mock report --all` before any round is finished says so (it printed nothing)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainer.cli import main


@pytest.mark.slow  # opens the whole bank: 3 s
def test_report_all_with_no_finished_round_says_so() -> None:
    out = CliRunner().invoke(main, ["mock", "report", "--all"])
    assert out.exit_code == 0, out.output
    assert "No finished mock round yet: start one with `dojo mock`." in out.output
    as_json = CliRunner().invoke(main, ["mock", "report", "--all", "--json"])
    assert as_json.exit_code == 0 and as_json.stdout.strip() == "[]", as_json.output
