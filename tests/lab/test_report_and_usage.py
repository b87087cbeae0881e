"""Text report and CLI details: a passing case marked `report=True` shows its measured figures
while other passes stay quiet; grading the reference file itself is refused as a usage error."""

from __future__ import annotations

from lab.grader.events import CasePassed
from lab.grader.report import TextReport


def _passed(case: str, note: str, report: bool) -> CasePassed:
    return CasePassed(level=4, case=case, required=True, duration_s=0.1, metrics={}, output="",
                      note=note, report=report)


def test_report_cases_show_their_note_and_plain_passes_stay_quiet() -> None:
    lines: list[str] = []
    report = TextReport(lines.append)
    report(_passed("plain", "law ok", False))
    report(_passed("L4-metrics", "α̂ = 0.77, τ = 3.20 tokens per target pass vs formula 3.18", True))
    assert lines == ["  ◦ L4-metrics: α̂ = 0.77, τ = 3.20 tokens per target pass vs formula 3.18"]


def test_grading_a_reference_file_in_place_is_a_usage_error() -> None:
    from click.testing import CliRunner

    from trainer.cli import main

    result = CliRunner().invoke(
        main, ["lab", "grade", "kv-bytes", "--file", "lab/reference/kv_bytes.py"]
    )
    assert result.exit_code == 2
    assert "reference implementation, not a solution" in result.output
