"""`dojo settings`: the daily limits and the rollover hour are configurable, validated, kept."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainer.cli import main


def dojo(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.slow
def test_settings_show_change_and_persist() -> None:
    code, out = dojo("settings")
    assert code == 0 and "new_limit          10" in out and "timezone           local" in out
    code, out = dojo("settings", "new_limit=3", "rollover_hour=2", "timezone=Europe/Paris")
    assert code == 0 and "new_limit          3" in out and "rollover_hour      2" in out
    code, out = dojo("settings")
    assert "new_limit          3" in out and "timezone           Europe/Paris" in out
    code, out = dojo("due", "--no-list")
    assert code == 0 and "3 new" in out


def test_bad_settings_are_refused_and_change_nothing() -> None:
    for args, message in [
        (("colour=blue",), "KEY one of"),
        (("new_limit=lots",), "whole number"),
        (("rollover_hour=25",), "rollover_hour"),
        (("timezone=Mars/Olympus",), "Mars/Olympus"),
    ]:
        code, out = dojo("settings", *args)
        assert code == 2 and message in out, (args, out)
    assert "new_limit          10" in dojo("settings")[1]


def test_settings_values_line_up_in_one_column() -> None:
    """desired_retention (17 letters) printed its value one column past the others' 14."""
    code, out = dojo("settings")
    lines = out.splitlines()
    assert code == 0 and any(line.startswith("desired_retention") for line in lines), out
    starts = {len(line) - len(line.split()[-1]) for line in lines}
    assert len(starts) == 1, out
