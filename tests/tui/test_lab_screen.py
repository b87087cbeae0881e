"""The lab screen: start a workspace, grade through the real `dojo lab serve` subprocess (kept
warm between gradings, stopped with the screen), cancel a run with one key (the subprocess is
killed), reveal hints one at a time."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from tests.tui.conftest import FIXTURES, ready
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen

REFERENCE = Path(__file__).resolve().parents[2] / "lab" / "reference" / "kv_bytes.py"


async def _lab(app: DojoApp, pilot) -> LabScreen:  # type: ignore[no-untyped-def]
    await pilot.press("l")
    screen = app.screen
    assert isinstance(screen, LabScreen)
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if screen.rows:
            return screen
    raise AssertionError("the lab catalogue never loaded")


async def _graded(screen: LabScreen, pilot) -> None:  # type: ignore[no-untyped-def]
    assert screen._grading is not None
    await screen._grading.wait()
    await pilot.pause()


@pytest.mark.slow
async def test_grade_kv_bytes_stub_then_a_correct_file(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        row = screen.selected()
        assert row is not None and (row.exercise, row.level) == ("kv-bytes", 1)
        assert row.status == "not started"
        await pilot.press("s")
        path = screen.workspaces["kv-bytes"]
        assert path.is_file() and "NotImplementedError" in path.read_text()

        await pilot.press("g")
        await _graded(screen, pilot)
        assert screen.last_summary is not None and screen.last_summary.passed is False
        table = screen.query_one("#lab-results", DataTable)
        results = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        # the stub stops the level at its first NotImplementedError: one failure, one skip row
        assert len(results) == 2 and "FAIL" in results[0] and "skipped" in results[1]
        log = "\n".join(screen.log_lines)
        assert "not implemented" in log and "more not run" in log
        assert log.count("✗ ") == 1  # one failure in full, not one per case
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.rows[0].status == "failing"

        server = screen._server  # `dojo lab serve`: kept between gradings
        assert server is not None and server.process.returncode is None
        path.write_text(REFERENCE.read_text())  # the reference passes, by definition
        await pilot.press("g")
        await _graded(screen, pilot)
        assert screen.last_summary is not None and screen.last_summary.passed is True
        assert screen._server is server  # the same warm process graded the edited file
        results = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert results and all("pass" in r for r in results)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.rows[0].status == "passing"
        await pilot.press("escape")  # leaving the screen stops the server
        await pilot.pause()
        assert server.process.returncode is not None


@pytest.mark.slow
async def test_cancel_kills_the_grader(make_app: Callable[..., DojoApp]) -> None:
    slow = [sys.executable, str(FIXTURES / "lab" / "slow_grader.py")]
    app = make_app(lab_command=slow)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s", "g")
        for _ in range(1500):  # a bound for a loaded machine, not a timing
            await pilot.pause(0.02)
            if screen._proc is not None and any("Grading" in line for line in
                                                screen.log_lines):
                break
        assert screen._proc is not None
        proc = screen._proc.process
        assert proc.returncode is None
        await pilot.press("x")
        assert screen._grading is not None
        for _ in range(1500):
            await pilot.pause(0.02)
            if proc.returncode is not None:
                break
        assert proc.returncode is not None  # killed, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(proc.pid, 0)
        assert any("Cancelled" in line for line in screen.log_lines)


@pytest.mark.slow
async def test_hints_one_at_a_time(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("h")
        log = "\n".join(screen.log_lines)
        assert "hint 1/" in log and "hint 2/" not in log
        await pilot.press("h")
        assert "hint 2/" in "\n".join(screen.log_lines)


@pytest.mark.slow
async def test_edit_opens_the_workspace_in_the_editor_hook(dojo_home: Path) -> None:
    """`e` creates the workspace if needed and hands its path to the (replaceable) editor."""
    from tests.tui.conftest import BANK
    from trainer.core.services import Services

    opened: list[Path] = []
    app = DojoApp(
        lambda: Services.open(bank_paths=[BANK]), editor=lambda _app, path: opened.append(path)
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await _lab(app, pilot)
        await pilot.press("e")
        assert len(opened) == 1 and opened[0].is_file()
        assert opened[0].is_relative_to(dojo_home)
    assert app.services is not None
    app.services.close()


@pytest.mark.slow
async def test_a_started_torch_lab_held_selected_is_prepared_ahead(
        make_app: Callable[..., DojoApp], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Selecting a started torch lab and staying on it sends the server one prepare request
    (its child imports torch before g is pressed); a pure-Python lab, a lab not started and a
    row passed over quickly send none. The hold itself is not timed here (a loaded machine
    stretches any pause): the test says when it has lasted (`prepare_held`, the timer's
    callback) and checks which level was pending and what was sent, in order."""
    import trainer.screens.lab as lab_screen

    requests = tmp_path / "requests.jsonl"
    monkeypatch.setenv("DOJO_TEST_REQUESTS", str(requests))
    monkeypatch.setattr(lab_screen, "PREPARE_AFTER_S", 3600.0)  # never fires by itself
    app = make_app(lab_command=[sys.executable, str(FIXTURES / "lab" / "recording_server.py")])

    def sent() -> list[dict[str, object]]:
        import json

        return [json.loads(x) for x in requests.read_text().splitlines()] if requests.exists() \
            else []

    async def held(count: int) -> list[dict[str, object]]:
        """The pending level's hold has lasted: wait until the server has `count` requests."""
        screen.prepare_held()
        for _ in range(600):  # a bound, not a timing: the server may start slowly
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            if len(sent()) >= count:
                break
        return sent()

    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        listing = screen.query_one("#lab-list")
        rows = [(r.exercise, r.level) for r in screen.rows]
        await pilot.press("s")  # kv-bytes L1: started, but no torch
        assert screen.prepare_pending is None
        for key in (("spec-verify", 1), ("spec-verify", 2), ("batch-engine", 1)):
            listing.highlighted = rows.index(key)  # type: ignore[attr-defined]
            await pilot.pause()
            await pilot.press("s")
        await app.workers.wait_for_complete()  # the catalogue read after each start
        await pilot.pause()
        assert screen.prepare_pending == ("batch-engine", 1)  # the rows passed over: dropped
        assert await held(1) == [{"exercise": "batch-engine", "level": 1, "prepare": True}]
        listing.highlighted = rows.index(("spec-verify", 2))  # type: ignore[attr-defined]
        await pilot.pause()
        assert screen.prepare_pending == ("spec-verify", 2)
        listing.highlighted = rows.index(("spec-verify", 1))  # type: ignore[attr-defined]
        await pilot.pause()
        assert screen.prepare_pending == ("spec-verify", 1)  # L2 passed over: only L1
        assert [(r["exercise"], r["level"]) for r in await held(2)] == [
            ("batch-engine", 1), ("spec-verify", 1)]
        listing.highlighted = rows.index(("paged-kv", 4))  # type: ignore[attr-defined]
        await pilot.pause()
        assert screen.prepare_pending is None  # paged-kv not started: nothing to prepare
        listing.highlighted = rows.index(("kv-bytes", 1))  # type: ignore[attr-defined]
        await pilot.pause()
        assert screen.prepare_pending is None  # no torch
        screen.prepare_held()
        assert len(sent()) == 2
        await pilot.press("g")  # the grading request follows on the same server
        await _graded(screen, pilot)
        assert sent()[-1] == {"exercise": "kv-bytes", "level": 1}


@pytest.mark.slow
async def test_grade_without_a_workspace_says_to_start_it_and_runs_nothing(
    make_app: Callable[..., DojoApp]
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("g")
        await pilot.pause()
        assert screen._grading is None and screen._server is None  # no grader was spawned
        notes = [n.message for n in app._notifications]
        assert any("no workspace file yet: press s" in n for n in notes)


@pytest.mark.slow
async def test_a_grader_that_ends_without_a_summary_does_not_leave_grading_on_screen(
    make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    import trainer.screens.lab as lab_screen

    dies = [sys.executable, "-c", "import sys; print('boom'); sys.exit(2)"]
    monkeypatch.setattr(lab_screen, "lab_command", lambda dojo: dies)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        await pilot.press("g")
        await _graded(screen, pilot)
        title = str(screen.query_one("#lab-results-title").render())
        assert "not graded" in title and "grading…" not in title
        from textual.widgets import ProgressBar

        assert not screen.query_one(ProgressBar).display
        assert "The grader exited with status 2 without a summary." in screen.log_lines
