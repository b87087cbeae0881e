"""`dojo lab watch --unconfined`: the grader's "no sandbox here" message names --unconfined;
watch, the command a learner keeps open, had no such option ("No such option")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.cli import main


@pytest.mark.slow
def test_watch_takes_unconfined_as_grade_does(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.grader.plan import NO_CONFINE_VAR

    monkeypatch.setenv(NO_CONFINE_VAR, "")  # restored after the test
    path = tmp_path / "kv_bytes.py"
    path.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n    return 0\n")
    result = CliRunner().invoke(main, ["lab", "watch", "kv-bytes", "--file", str(path),
                                       "--on", "gpu-box", "--unconfined"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == ("Error: --unconfined switches off this machine's sandbox; "
                                     "gpu-box grades in its own (use --on local to grade here "
                                     "unconfined)")
    assert "--unconfined" in CliRunner().invoke(main, ["lab", "watch", "--help"]).output
