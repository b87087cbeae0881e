"""The mock round's lab part grades through the lab_host setting (and `mock grade --on`): a host
that refuses leaves the part open with nothing recorded; the host's pass ends it, recorded here
with the host."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from scheduler.store import Store
from tests.mock.helpers import right_answer, solve_lab
from trainer.cli import main
from trainer.core import mock as core
from trainer.core.services import Services

pytestmark = pytest.mark.slow


def test_the_mock_rounds_lab_part_grades_on_the_host(
        on_host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "choose_lab", lambda bank, weak: ("kv-bytes", 1, "kv-cache"))
    runner = CliRunner()
    assert runner.invoke(main, ["mock", "--minutes", "20"]).exit_code == 0
    for _ in range(40):
        opened = Services.open()
        try:
            mock = core.resume(opened.store)
            assert mock is not None and mock.current is not None
            if mock.current.kind == "lab":
                break
            text = right_answer(mock, opened)
        finally:
            opened.close()
        assert runner.invoke(main, ["mock", "answer", text]).exit_code == 0
    solve_lab("kv-bytes")
    refused = runner.invoke(main, ["mock", "grade", "--on", "dojo-wrong-key"])
    assert refused.exit_code == 1
    assert "dojo-wrong-key refused the login (Permission denied)" in refused.output
    assert "The lab part stays open." in refused.output
    with Store.open() as store:
        assert store.lab_attempts() == [] and store.open_mock_round() is not None
    assert runner.invoke(main, ["settings", f"lab_host={on_host}"]).exit_code == 0
    out = runner.invoke(main, ["mock", "grade"])
    assert out.exit_code == 0, out.output
    assert f"kv-bytes L1 passed (graded on cpu at {on_host})." in out.output
    with Store.open() as store:
        assert [(a.passed, a.metrics.get("host")) for a in store.lab_attempts()] == [
            (True, on_host)]
        assert store.open_mock_round() is None
