"""How a level's failures are grouped and pointed at: the grouping key holds no
per-case data, cases not run are counted truly and named for why, a traceback is called "your
code" only with the learner's own frames, and a statistical case shows no `expected: None`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.events import CaseFailed, LevelSummary
from lab.grader.report import TextReport, failure_signature, group_label
from lab.grader.testing import grade_file, only_cases

STOPPED = ("not run: your code was already stopped 3 times in this run (timeout) — fix that "
           "first")


def _failed(case: str, kind: str = "wrong", message: str = "", size: int = 10,
            traceback: str = "", expected: str = "", got: str = "") -> CaseFailed:
    return CaseFailed(level=1, case=case, required=True, duration_s=0.1, metrics={}, output="",
                      kind=kind, message=message, traceback=traceback, params={}, size=size,
                      expected=expected, got=got, seed=1, replay="dojo lab grade x --seed 1")


def _wrong(i: int) -> CaseFailed:
    value = 1024 * (i + 1)
    return _failed(f"hidden-{i:02d}", message=f"kv_bytes_per_token: expected {2 * value:,}, got "
                   f"{value:,} (0.5× the expected value) — the cache stores both (factor 2)",
                   size=i + 1)


def _summary(cases: int) -> LevelSummary:
    return LevelSummary(level=1, title="Bytes per token", passed=False, cases=cases,
                        passed_cases=0, failed_required=cases, failed_optional=0,
                        smallest_failure=None, metrics={}, duration_s=1.0, case_metrics={})


def _report(events: list[CaseFailed]) -> list[str]:
    lines: list[str] = []
    report = TextReport(lines.append)
    for e in events:
        report(e)
    report(_summary(len(events)))
    return lines


def test_failures_differing_only_in_their_numbers_are_one_group() -> None:
    failures = [_wrong(i) for i in range(16)]
    assert len({failure_signature(f) for f in failures}) == 1
    lines = _report(failures)
    assert ("    15 more failed the same way (wrong: kv_bytes_per_token: expected …, got … "
            "(0.5× the expected value) — the cache stores both (factor 2))") in lines
    assert not any(line.lstrip().startswith("×") for line in lines)


def test_cases_not_run_are_counted_truly_and_a_case_that_ran_is_shown() -> None:
    timeouts = [_failed(f"big-{i}", "timeout", "no answer within 1 s — an infinite loop? "
                        "(stopped)", size=100) for i in range(3)]
    skipped = [_failed(f"small-{i:02d}", "skipped", STOPPED, size=1) for i in range(52)]
    lines = _report(timeouts + skipped)
    assert "    smallest failing case: big-0 [timeout]" in lines  # not a case that never ran
    assert any(line.startswith("    2 more failed the same way (timeout: no answer within 1 s")
               for line in lines)
    assert any(line.startswith("    52 not run: your code was already stopped 3 times in this "
                               "run (timeout) — fix that first: small-00, ") for line in lines)


def test_a_traceback_without_the_learners_frames_is_not_called_theirs() -> None:
    refused = _failed("tiny", "exception", "TypeError: kv_bytes_per_token() takes 2 positional "
                      "arguments but 3 were given", traceback="TypeError: kv_bytes_per_token() "
                      "takes 2 positional arguments but 3 were given\n")
    assert "      traceback (your code):" not in _report([refused])
    theirs = _failed("tiny", "exception", "ValueError (kv_bytes.py:3, in f): no",
                     traceback='  File "/ws/kv_bytes.py", line 3, in f\n    raise ValueError("no")'
                               "\nValueError: no\n")
    assert "      traceback (your code):" in _report([theirs])


def test_group_label_keeps_only_the_numbers_the_group_shares() -> None:
    label = group_label([_wrong(0), _wrong(5)])
    assert label == ("wrong: kv_bytes_per_token: expected …, got … (0.5× the expected value) "
                     "— the cache stores both (factor 2)")


@pytest.mark.slow
def test_a_wrong_signature_shows_none_of_the_graders_frames(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("def kv_bytes_per_token(config):\n    return 0\n")
    run = grade_file(only_cases("kv-bytes", "tiny-one-layer"), solution, 1)
    failure = run.failures[0]
    assert failure["kind"] == "exception"
    assert "drive.py" not in failure["traceback"] and 'File "' not in failure["traceback"]
    assert failure["traceback"].startswith("TypeError: kv_bytes_per_token() got an unexpected")


@pytest.mark.slow
def test_spec_verify_statistical_cases_show_no_expected_none() -> None:
    from tests.spec_verify.broken import __file__ as broken

    one = only_cases("spec-verify", "L2-law-k1", "L2-law-p_eq_q")
    run = grade_file(one, Path(broken).parent / "l2_ratio_inverted.py", 2)
    assert run.failures
    assert all(f["expected"] != "None" for f in run.failures)
    lines: list[str] = []
    report = TextReport(lines.append)
    for e in run.result.events:
        report(e)
    assert not any("expected: None" in line for line in lines)
