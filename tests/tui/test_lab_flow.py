"""The lab screen's flow: results on screen always belong to the selected
level, a pass names the next level and `n` starts it, and lab text wraps instead of being cut
(hints, the log, the Task pop-up's signatures) at 100x30 and at 60x20."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable, RichLog, Static
from textual.widgets._markdown import MarkdownFence

from tests.tui.conftest import ready
from tests.tui.test_lab_screen import _graded, _lab
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen, TaskScreen

REFERENCE = Path(__file__).resolve().parents[2] / "lab" / "reference" / "kv_bytes.py"


def _squash(text: str) -> str:
    return "".join(text.split())


def _index(screen: LabScreen, exercise: str, level: int) -> int:
    return next(i for i, r in enumerate(screen.rows) if (r.exercise, r.level) == (exercise, level))


async def _select(  # type: ignore[no-untyped-def]
    screen: LabScreen, pilot, exercise: str, level: int
) -> None:
    from textual.widgets import OptionList

    screen.query_one("#lab-list", OptionList).highlighted = _index(screen, exercise, level)
    await pilot.pause()


@pytest.mark.slow
async def test_another_exercises_results_are_never_shown(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        await pilot.press("g")
        await _graded(screen, pilot)
        table = screen.query_one("#lab-results", DataTable)
        assert table.row_count > 0 and any("kv-bytes" in line for line in screen.log_lines)
        await app.workers.wait_for_complete()
        await pilot.pause()

        await _select(screen, pilot, "spec-verify", 1)
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert table.row_count == 0
        assert not any("kv-bytes" in line or "Level 1:" in line for line in screen.log_lines)
        title = str(screen.query_one("#lab-results-title", Static).render())
        assert "spec-verify L1" in title and "kv-bytes" not in title


@pytest.mark.slow
async def test_a_pass_names_the_next_level_and_n_starts_it(
    make_app: Callable[..., DojoApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        screen.workspaces["kv-bytes"].write_text(REFERENCE.read_text())
        await pilot.press("g")
        await _graded(screen, pilot)
        assert ("Level 1 passed — next: Level 2 (Capacity planning). Press n."
                in screen.log_lines)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r.status for r in screen.rows if r.exercise == "kv-bytes"][:2] == [
            "passing", "not started"]
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        row = screen.selected()
        assert row is not None and (row.exercise, row.level) == ("kv-bytes", 2)
        assert row.status == "started"


@pytest.mark.slow
@pytest.mark.parametrize("size", [(100, 30), (60, 20)])
async def test_hints_and_the_log_wrap_instead_of_being_cut(
    make_app: Callable[..., DojoApp], size: tuple[int, int],
) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        hints = screen.exercises["kv-bytes"].hints()
        for _ in hints:
            await pilot.press("h")
        await pilot.pause()
        log = screen.query_one("#lab-log", RichLog)
        shown = [strip.text for strip in log.lines]
        assert max(len(line.rstrip()) for line in shown) <= log.scrollable_content_region.width
        for hint in hints:
            assert _squash(hint) in _squash("".join(shown))


@pytest.mark.slow
@pytest.mark.parametrize("size", [(100, 30), (60, 20)])
async def test_the_task_signatures_wrap(make_app: Callable[..., DojoApp],
                                        size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await _lab(app, pilot)
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, TaskScreen)
        fences = list(app.screen.query(MarkdownFence))
        assert fences
        for fence in fences:
            assert fence.virtual_size.width <= fence.size.width  # nothing off to the right
            assert _squash(fence.code) in _squash(str(fence.query_one("Label").render()))


@pytest.mark.slow
async def test_interview_rehearsal_clock_no_hints_and_restore(
    make_app: Callable[..., DojoApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        mine = screen.workspaces["kv-bytes"]
        mine.write_text(mine.read_text() + "\n# my own work\n")
        clock = screen.query_one("#lab-clock", Static)
        assert not clock.display

        await pilot.press("I")
        await pilot.pause()
        assert clock.display and "Interview kv-bytes L1: 0:0" in str(clock.render())
        assert "of 45:00" in str(clock.render())
        assert "# my own work" not in mine.read_text()
        await pilot.press("h")
        assert not any("hint 1/" in line for line in screen.log_lines)

        await pilot.press("g")
        await _graded(screen, pilot)
        screen._tick()
        assert "gradings 1" in str(clock.render())

        await pilot.press("R")
        await pilot.pause()
        assert not clock.display and "# my own work" in mine.read_text()
