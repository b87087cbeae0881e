"""The lab's detail panel at 60x20: where your file is stays in view once a level is graded."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.geometry import Region
from textual.widgets import Static

from tests.tui.conftest import ready
from trainer.app import DojoApp


@pytest.mark.slow
async def test_the_workspace_path_is_in_view_at_60x20_after_a_pass(
    make_app: Callable[..., DojoApp],
) -> None:
    """A walkthrough at 60x20: after batch-engine L1 passed, the panel showed "Workspace:" and
    nothing after it (title 2 rows + the status 4 filled its 8 rows; the path wrapped below)."""
    from scheduler.store import Store
    from trainer.screens.lab import LabScreen

    with Store.open() as store:  # a passing grading with best figures: the longest status
        store.record_lab_attempt("kv-bytes", 1, "cpu", True,
                                 [{"id": f"case-{i}", "passed": True, "kind": ""}
                                  for i in range(28)], {"p95_ratio": 1.0}, 0.5)
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.press("s")  # create the workspace file from the stub
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if screen.workspaces.get("kv-bytes"):
                break
        path = screen.workspaces["kv-bytes"]
        assert path is not None
        screen._describe()
        await pilot.pause()
        detail = screen.query_one("#lab-detail", Static)
        width, height = detail.content_region.size
        shown = "".join(strip.text for strip in
                        detail.render_lines(Region(0, 0, width, height))).replace(" ", "")
        assert "Status:" in shown or "passing" in shown  # the status is there too
        assert str(path).replace(" ", "") in shown, (str(path), shown)
