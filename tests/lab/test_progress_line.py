"""`dojo lab grade`'s progress line on a terminal: rich draws it in place,
within the terminal's width, case names as written, and erases it before a permanent line."""

from __future__ import annotations

import io

from rich.console import Console

from lab.grader.report import TextReport
from trainer.commands.lab import ProgressLine


def _terminal(width: int = 30) -> tuple[io.StringIO, Console]:
    out = io.StringIO()
    return out, Console(file=out, force_terminal=True, width=width, color_system=None)


def test_the_line_shows_the_case_in_place_and_is_erased_when_cleared() -> None:
    out, console = _terminal()
    line = ProgressLine(console)
    line("  L1 case 3/28: k1 …")
    shown = out.getvalue()
    assert shown.endswith("\r\x1b[2K  L1 case 3/28: k1 …")  # drawn over the same line
    line("  L1 case 4/28: [bold]a-very-long-case-name-that-overflows …")
    redrawn = out.getvalue()[len(shown):]
    assert redrawn == "\r\x1b[2K  L1 case 4/28: [bold]a-very-…"  # literal, cut to 30 columns
    line("")
    assert out.getvalue().endswith("\r\x1b[2K\x1b[?25h\r")  # erased, cursor given back
    assert not line.progress.live.is_started
    line.close()  # closing twice is harmless (the grading's `finally`)


def test_the_report_clears_the_line_before_each_permanent_line() -> None:
    out, console = _terminal(60)
    written: list[str] = []

    def write(text: str) -> None:
        written.append(text)
        console.file.write(text + "\n")

    line = ProgressLine(console)
    report = TextReport(write, status=line)
    line("  L1 case 1/2: k1 …")
    report.write("  ✓ k1")
    assert not line.progress.live.is_started
    assert out.getvalue().endswith("\r\x1b[2K\x1b[?25h\r  ✓ k1\n")
    assert written == ["  ✓ k1"]
