"""Learner-controlled text (exception messages) in the lab screen is shown literally: Rich
markup in it used to crash the results table ('[/]') or silently drop words ('[int4]')."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets._data_table import default_cell_formatter

from tests.tui.conftest import ready
from tests.tui.test_lab_screen import _graded, _lab
from trainer.app import DojoApp


@pytest.mark.slow
async def test_markup_in_a_learners_message_is_shown_as_text(
    make_app: Callable[..., DojoApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")
        screen.workspaces["kv-bytes"].write_text(
            "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
            "    raise ValueError('[/] [int4]')\n"
        )
        await pilot.press("g")
        await _graded(screen, pilot)
        await pilot.pause()
        table = screen.query_one("#lab-results", DataTable)
        shown = [default_cell_formatter(table.get_row_at(i)[4]) for i in range(table.row_count)]
        assert all(isinstance(cell, Text) for cell in shown)
        assert any("'[/] [int4]'" in cell.plain for cell in shown if isinstance(cell, Text))
