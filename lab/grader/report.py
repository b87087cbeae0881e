"""Render the grader's event stream as a human report (the CLI's default output).

Passing cases stay quiet; a failed level shows its smallest failing case in full (input,
expected, got, why, the learner's traceback and output) once, then groups the other failures
by how they failed ("27 more failed the same way: …"), so a stub gives one screen, not 38
tracebacks. Floats are shown without binary noise (`tidy_floats`): 0.066, not
0.06600000000000004. On a terminal a one-line progress status ("case 3/28: L1-k1 …") is
rewritten in place while cases run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from lab.grader.events import (
    CaseFailed,
    CasePassed,
    CasesSkipped,
    CaseStarted,
    Event,
    LevelSummary,
    Metrics,
    Notice,
    RunStarted,
    Summary,
)
from questions.wording import noun

MAX_OTHER_FAILURES = 8
FLOAT_NOISE = re.compile(r"(?<![\w.])-?\d+\.\d{7,}(?:[eE][-+]?\d+)?(?![\w.])")
TRACEBACK_FILE = re.compile(r'File "(?:[^"]*/)?([^"/]+)", line (\d+)')


def tidy_floats(text: str) -> str:
    """Print floats the way a person would write them: 12 significant digits at most, so
    0.06600000000000004 reads 0.066 and 1.0000000000000002 reads 1.0 (real differences beyond
    that are far below any tolerance a check uses)."""

    def shorter(match: re.Match[str]) -> str:
        value = float(match.group(0))
        short = repr(float(f"{value:.12g}"))
        return short if len(short) < len(match.group(0)) else match.group(0)

    return FLOAT_NOISE.sub(shorter, text)


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")


def failure_signature(failure: CaseFailed) -> str:
    """What makes two failures "the same way": the exception and the line of the learner's code
    it came from ("NotImplementedError at stub.py:23"), else the kind and the message with its
    numbers left out ("wrong: expected …, got …"): the per-case values differ, the mistake
    does not (`group_label` puts back the numbers a group shares)."""
    tb = str(failure.traceback or "").rstrip().splitlines()
    if tb:
        files = TRACEBACK_FILE.findall("\n".join(tb))
        last = tb[-1].split(":", 1)[0].strip()
        if files and last:
            name, line = files[-1]
            return f"{last} at {name}:{line}"
    return f"{failure.kind}: {NUMBER.sub('…', _first_line(failure))}"


def _first_line(failure: CaseFailed) -> str:
    message = tidy_floats(str(failure.message or "")).splitlines()
    return message[0] if message else ""


def group_label(failures: list[CaseFailed]) -> str:
    """How a group of failures with one signature is named: the signature, with each number
    that every failure of the group shares put back ("(0.5× the expected value)", "factor 2")
    and the ones that differ left as "…"."""
    signature = failure_signature(failures[0])
    if " at " in signature and failures[0].traceback:
        return signature
    columns = [NUMBER.findall(_first_line(f)) for f in failures]
    if len({len(c) for c in columns}) != 1:
        return signature
    shared = iter([c[0] if len(set(c)) == 1 else "…" for c in zip(*columns, strict=True)])
    return f"{failures[0].kind}: {NUMBER.sub(lambda _: next(shared), _first_line(failures[0]))}"


def not_run_note(failures: list[CaseFailed]) -> str:
    """The cases of a level not run after the learner's child was stopped too often (kind
    `skipped`), said once with their true count: "52 not run: your code was already stopped
    3 times in this run (timeout) — fix that first"."""
    reason = str(failures[0].message or "").removeprefix("not run: ")
    return f"{len(failures)} not run: {reason}"


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.rstrip().splitlines())


def next_step(e: Summary, key: str = "") -> str:
    """After a pass, what to do next (from the summary event's `next_level`): "Level 2 passed —
    next: Level 3 (Batched verification). Run `dojo lab start spec-verify --level 3`." `key`
    names the TUI's key for it instead of the command."""
    nxt = e.next_level
    if not e.passed or not isinstance(nxt, dict):
        return ""
    graded = list(e.levels)
    done = f"Level {graded[0]}" if len(graded) == 1 else f"Levels {', '.join(graded)}"
    how = f"Press {key}." if key else f"Run `{nxt['command']}`."
    return f"{done} passed — next: Level {nxt['number']} ({nxt['title']}). {how}"


class TextReport:
    """Callable event sink: `grade(..., emit=TextReport(click.echo))`.

    `status`, when given (a terminal), receives a one-line progress text to show in place
    ("" clears it); `write` gets every permanent line."""

    def __init__(self, write: Callable[[str], None],
                 status: Callable[[str], None] | None = None) -> None:
        self._write = write
        self.status = status
        self.failures: dict[int, list[CaseFailed]] = {}
        self.skipped: dict[int, CasesSkipped] = {}
        self.seed: int | None = None
        self.replay = ""
        self.started = ""

    def write(self, line: str) -> None:
        if self.status is not None:
            self.status("")
        self._write(line)

    def __call__(self, event: Event) -> None:
        handler = getattr(self, "_" + event.EVENT, None)
        if handler is not None:
            handler(event)

    def _run_started(self, e: RunStarted) -> None:
        self.seed, self.replay = e.seed, e.replay
        self.write(f"{e.exercise} — {e.title}")
        self.write(f"  file:   {e.solution}")
        at = f" at {e.host}" if e.host else ""
        self.write(f"  device: {e.device} ({e.device_note}){at} · seed {e.seed}")

    def _notice(self, e: Notice) -> None:
        self.write(f"  note:   {e.message}")

    def _case_started(self, e: CaseStarted) -> None:
        if self.status is not None:
            self.status(f"  L{e.level} case {e.index}/{e.total}: {e.case} …")

    def _metrics(self, e: Metrics) -> None:
        m = e.metrics
        if "median_ratio" in m and m.get("samples") == 1:  # a `timed_once` case
            cpu = m.get("cpu_median_ratio")
            runs = int(m.get("reference_runs", 1))
            how = "one run each" if runs == 1 else f"your one run against the median of " \
                                                   f"{runs} reference runs back to back"
            self.write(
                f"  ⏱ {e.case}: {m['median_ratio']:.2f}× the reference's time "
                f"({m['learner_median_ms'] / 1e3:.3g} s vs {m['reference_median_ms'] / 1e3:.3g} s,"
                f" {how}, side by side)"
                + ("" if cpu is None else f", {cpu:.2f}× in CPU time")
            )
        elif "median_ratio" in m:
            self.write(
                f"  ⏱ {e.case}: {m['median_ratio']:.2f}× the reference's median time "
                f"({m['learner_median_ms']:.3g} ms vs {m['reference_median_ms']:.3g} ms), "
                f"p95 {m['p95_ratio']:.2f}×"
            )

    def _case_passed(self, e: CasePassed) -> None:
        if e.report and e.note:
            self.write(f"  ◦ {e.case}: {tidy_floats(e.note)}")

    def _case_failed(self, e: CaseFailed) -> None:
        self.failures.setdefault(int(e.level), []).append(e)

    def _cases_skipped(self, e: CasesSkipped) -> None:
        self.skipped[int(e.level)] = e

    def _level_summary(self, e: LevelSummary) -> None:
        level, total, ok = int(e.level), e.cases, e.passed_cases
        head = f"Level {level} · {e.title}: "
        if e.passed:
            optional = f", {e.failed_optional} optional failed" if e.failed_optional else ""
            self.write(f"✓ {head}PASSED ({ok}/{total} {noun(total, 'case')}{optional}, "
                       f"{e.duration_s:.1f} s)")
        else:
            self.write(f"✗ {head}FAILED ({ok}/{total} {noun(total, 'case')} passed, "
                       f"{e.duration_s:.1f} s)")
        ran = sorted((f for f in self.failures.get(level, []) if f.kind != "skipped"),
                     key=lambda f: (not f.required, f.size, f.case))
        not_run = [f for f in self.failures.get(level, []) if f.kind == "skipped"]
        if ran:
            self._detail(ran[0])
            self._others(ran[0], ran[1:])
        if not_run:
            names = [f.case for f in not_run]
            more = len(names) - MAX_OTHER_FAILURES
            self.write(f"    {not_run_note(not_run)}: {', '.join(names[:MAX_OTHER_FAILURES])}"
                       + (f" … (+{more})" if more > 0 else ""))
        skipped = self.skipped.get(level)
        if skipped:
            self.write(f"    {len(skipped.cases)} more not run: the first one failed with "
                       f"{ran[0].kind if ran else 'an error'}, the rest would fail "
                       "the same way — fix it and grade again")

    def _others(self, first: CaseFailed, others: list[CaseFailed]) -> None:
        """The other failures, grouped by how they failed (one line per group)."""
        if not others:
            return
        groups: dict[str, list[CaseFailed]] = {}
        for f in others:
            groups.setdefault(failure_signature(f), []).append(f)
        same = groups.pop(failure_signature(first), [])
        if same:
            self.write(f"    {len(same)} more failed the same way ({group_label([first, *same])})"
                       + (":" if groups else ""))
        else:
            self.write(f"    {len(others)} more failed:")
        for members in sorted(groups.values(), key=lambda fs: -len(fs)):
            names = [f.case for f in members]
            shown = ", ".join(names[:MAX_OTHER_FAILURES])
            more = len(names) - MAX_OTHER_FAILURES
            self.write(f"      ×{len(names)} {group_label(members)}: {shown}"
                       + (f" … (+{more})" if more > 0 else ""))

    def _detail(self, f: CaseFailed) -> None:
        optional = "" if f.required else " (optional)"
        self.write(f"    smallest failing case{optional}: {f.case} [{f.kind}]")
        self.write("      input:    " + tidy_floats(json.dumps(f.params, default=str)))
        if f.expected:
            self.write(f"      expected: {tidy_floats(f.expected)}")
        if f.got:
            self.write(f"      got:      {tidy_floats(f.got)}")
        self.write(f"      why:      {tidy_floats(f.message)}")
        if 'File "' in f.traceback:  # frames of the learner's own files only (sandbox.py)
            self.write("      traceback (your code):")
            self.write(_indent(f.traceback, "        "))
        if f.output:
            self.write("      your output (trimmed):")
            self.write(_indent(f.output, "        | "))
        self.write(f"      replay:   {f.replay}")

    def _summary(self, e: Summary) -> None:
        failed = [lvl for lvl, ok in e.levels.items() if not ok]
        verdict = "PASSED" if e.passed else f"FAILED (level {', '.join(failed)})"
        at = f" at {e.host}" if e.host else ""
        self.write(f"{verdict} in {e.duration_s:.1f} s on {e.device}{at} · replay: {e.replay}")
        if e.store_error and "missing" not in e.store_error:
            self.write(f"(not saved: {e.store_error})")
        step = next_step(e)
        if step:
            self.write(step)
