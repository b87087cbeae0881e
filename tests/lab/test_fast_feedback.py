"""Fast, quiet feedback: cases run cheapest first, a stub stops the level at its first
NotImplementedError (the rest reported as skipped, in one event and one line), the reference is
not computed for a case the learner's code never answered, identical failures are grouped,
floats are shown without binary noise, a progress status names the case, and a pass names the
next level."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lab.exercises import get
from lab.grader import events
from lab.grader.report import TextReport, failure_signature, next_step, tidy_floats
from lab.grader.runner import GradeOptions, grade

ROOT = Path(__file__).resolve().parents[2]


def test_a_stub_stops_at_the_first_not_implemented_without_computing_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ex = get("kv-bytes")
    grading = ex.grading()
    calls: list[str] = []
    real = getattr(grading, "expected", None)

    def counting(case: Any, ctx: Any) -> Any:
        calls.append(case.id)
        return real(case, ctx) if real else None

    monkeypatch.setattr(grading, "expected", counting, raising=False)
    monkeypatch.setattr(type(ex), "grading", lambda self: grading)
    seen: list[events.Event] = []
    result = grade(ex, ex.stub_path, GradeOptions(
        levels=[1], seed=5, emit=seen.append))
    assert not result.passed
    started = [e for e in seen if isinstance(e, events.CaseStarted)]
    skipped = [e for e in seen if isinstance(e, events.CasesSkipped)]
    assert len(started) == 1 and started[0].index == 1
    cases = grading.cases(1, 5)
    assert started[0].total == len(cases) > 1
    assert started[0].size == min(c.size for c in cases)  # the cheapest case first
    assert len(skipped) == 1 and len(skipped[0].cases) == len(cases) - 1
    kinds = [r.kind for r in result.levels[0].results]
    assert kinds == ["not_implemented"] + ["skipped"] * (len(cases) - 1)
    assert calls == []  # no reference answer was computed for the stub
    summary = next(e for e in seen if isinstance(e, events.LevelSummary))
    assert summary.smallest_failure is not None
    assert summary.smallest_failure["case"] == started[0].case  # the one that ran, not a skip


def test_cases_run_cheapest_first_on_a_correct_file() -> None:
    ex = get("kv-bytes")
    seen: list[events.Event] = []
    result = grade(ex, ROOT / "tests/lab/solutions/correct.py", GradeOptions(levels=[1], seed=3,
                   emit=seen.append))
    assert result.passed
    sizes = [e.size for e in seen if isinstance(e, events.CaseStarted)]
    assert sizes == sorted(sizes) and len(sizes) > 1
    summary = next(e for e in seen if isinstance(e, events.Summary))
    assert summary.next_level is not None and summary.next_level["number"] == 2
    assert summary.next_level["command"] == "dojo lab start kv-bytes --level 2"


def _failed(case: str, size: int, message: str, traceback: str = "") -> events.CaseFailed:
    return events.CaseFailed(
        level=1, case=case, required=True, duration_s=0.1, metrics={}, output="",
        kind="exception" if traceback else "wrong", message=message, traceback=traceback,
        params={"x": 0.1 + 0.2}, size=size, expected="0.30000000000000004", got="0.3",
        seed=1, replay="dojo lab grade ex --seed 1")


TB = ('  File "/home/u/lab/spec_verify.py", line 23, in verify\n'
      '    raise ValueError("boom")\nValueError: boom\n')


def test_identical_failures_are_grouped_and_floats_tidied() -> None:
    lines: list[str] = []
    report = TextReport(lines.append)
    for i in range(38):
        report(_failed(f"c{i}", 10 + i, "boom", TB))
    report(_failed("odd", 99, "expected 0.06600000000000004, got 0.07"))
    summary = events.from_dict({"event": "level_summary", "level": 1, "title": "T",
                                "passed": False, "cases": 39, "passed_cases": 0,
                                "duration_s": 1.0, "failed_optional": 0})
    assert summary is not None
    report(summary)
    text = "\n".join(lines)
    assert "smallest failing case: c0 [exception]" in text
    assert text.count("ValueError: boom") == 1  # one traceback, not 38
    assert "37 more failed the same way (ValueError at spec_verify.py:23):" in text
    assert "×1 wrong: expected 0.066, got 0.07: odd" in text
    assert '"x": 0.3' in text and "expected: 0.3" in text
    assert "0.30000000000000004" not in text


def test_tidy_floats_keeps_meaningful_digits_and_non_floats() -> None:
    assert tidy_floats("0.06600000000000004 and 1.0000000000000002") == "0.066 and 1.0"
    assert tidy_floats("0.1234567 v1.2.3333333333 1e-07") == "0.1234567 v1.2.3333333333 1e-07"
    assert tidy_floats("3.14159265358979") == "3.14159265359"


def test_signature_without_a_traceback_is_kind_and_message() -> None:
    failure = events.from_dict({"event": "case_failed", "kind": "wrong",
                                "message": "off by one\nmore"})
    assert isinstance(failure, events.CaseFailed)
    assert failure_signature(failure) == "wrong: off by one"


def test_progress_status_names_the_case_and_is_cleared_before_lines() -> None:
    lines: list[str] = []
    status: list[str] = []
    report = TextReport(lines.append, status=status.append)
    report(events.CaseStarted(level=2, case="L2-k3", description="", size=1, required=True,
                              timed=False, params={}, index=3, total=28))
    report(events.Notice(message="hello"))
    assert status == ["  L2 case 3/28: L2-k3 …", ""]
    assert lines == ["  note:   hello"]


def test_next_step_after_a_pass_only() -> None:
    nxt = {"number": 3, "title": "Batched verification",
           "command": "dojo lab start spec-verify --level 3"}
    e = events.Summary(exercise="spec-verify", device="cpu", seed=1, passed=True,
                       levels={"2": True}, duration_s=1.0, replay="", stored=True, store_error="",
                       next_level=nxt)
    assert next_step(e) == ("Level 2 passed — next: Level 3 (Batched verification). "
                            "Run `dojo lab start spec-verify --level 3`.")
    assert next_step(e, key="n").endswith("Press n.")
    assert next_step(replace(e, passed=False)) == ""
    assert next_step(replace(e, next_level=None)) == ""


def test_list_marks_only_the_levels_started(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from trainer.cli import main

    monkeypatch.setenv("DOJO_HOME", str(tmp_path))
    runner = CliRunner()

    def levels() -> dict[str, str]:
        out = runner.invoke(main, ["lab", "list"]).output.splitlines()
        start = next(i for i, line in enumerate(out) if line.startswith("spec-verify"))
        rows = []
        for line in out[start + 1:]:
            if not line.startswith("  L"):
                break
            rows.append(line.split())
        return {r[0]: "started" if "started" in r and "not" not in r else "-" for r in rows}

    assert set(levels().values()) == {"-"}
    first = runner.invoke(main, ["lab", "start", "spec-verify"])
    assert first.exit_code == 0 and "level 1 (" in first.output
    assert levels()["L1"] == "started" and levels()["L2"] == "-"
    third = runner.invoke(main, ["lab", "start", "spec-verify", "--level", "3"])
    assert "already started" in third.output
    assert "dojo lab grade spec-verify --level 3" in third.output
    marks = levels()
    assert marks["L1"] == marks["L3"] == "started" and marks["L2"] == "-"
    bad = runner.invoke(main, ["lab", "start", "spec-verify", "--level", "9"])
    assert bad.exit_code == 2 and "has no level 9" in bad.output


def test_auto_device_without_nvidia_nodes_does_not_import_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from lab.grader import device

    monkeypatch.setattr(device, "nvidia_device_nodes", lambda: False)
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it would raise
    assert device.resolve_device("auto", True) == ("cpu", "auto: no CUDA device")
    assert device.resolve_device("cpu", True) == ("cpu", "requested")
    with pytest.raises(ImportError):
        device.resolve_device("cuda", True)  # cuda asked for: torch must say
