"""The Lab screen's results: the table, progress bar and log a grading writes as its typed
events arrive (`trainer.core.lab`), and a level's last stored grading when none is running.

A base of `LabScreen` (trainer/screens/lab.py), which owns the catalogue, the actions and the
grading server; this part only turns events into rows and log lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.text import Text
from textual.widgets import DataTable, ProgressBar, RichLog, Static

from questions.wording import noun
from trainer.core import lab as service
from trainer.core.lab import (
    CaseFailed,
    CasePassed,
    CasesSkipped,
    CaseStarted,
    Event,
    LevelSummary,
    Notice,
    RunStarted,
    Summary,
    failure_signature,
    group_label,
    next_step,
    not_run_note,
    tidy_floats,
)
from trainer.screens.base import DojoScreen

CASE_WIDTH = 20  # a case id in the results table, cut with … (the log has it whole)


class LabResultsScreen(DojoScreen):
    """What a grading shows: results table, progress, log (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.last_summary: Summary | None = None
        self._gpu = ""  # the GPU a grading runs on ("graded on cuda — NVIDIA H100 at gpu-box")
        self.shown_for: tuple[str, int] | None = None  # whose results/log are on screen
        self.log_lines: list[str] = []  # the log's text, unwrapped (tests, copy)
        self.last_attempts: dict[tuple[str, int], Any] = {}  # stored, newest per level
        # the level graded: its failures by signature, and the cases not run (kind skipped)
        self._signatures: dict[str, list[CaseFailed]] = {}
        self._not_run: list[CaseFailed] = []

    @contextmanager
    def lab(self) -> Iterator[service.Lab]:
        """The lab through the app's store once it is open (one handle for the screen), else
        through a store opened for this call."""
        services = self.dojo.services
        if services is None:
            with service.Lab.open() as lab:
                yield lab
        else:
            yield service.Lab(services.store, now=services.now)

    def write_log(self, line: str) -> None:
        """One line in the log, wrapped to its width (learner text: never markup)."""
        self.log_lines.append(line)
        self.query_one("#lab-log", RichLog).write(Text(line))

    def _clear_results(self, exercise: str, level: int, *, stored: bool = True) -> None:
        """Empty the results and log for (exercise, level); with `stored`, show the level's
        last stored grading instead (a grading about to start passes False)."""
        self.shown_for = (exercise, level)
        table = self.query_one("#lab-results", DataTable)
        table.clear()
        self.query_one("#lab-log", RichLog).clear()
        self.log_lines = []
        self.query_one(ProgressBar).display = False
        title = self.query_one("#lab-results-title", Static)
        last = self.last_attempts.get((exercise, level)) if stored else None
        if last is None:
            title.update(f"{exercise} L{level}: no results yet — g grades it")
            return
        # The stored attempt, so a grading survives a restart of the app.
        ok = sum(bool(c.get("passed")) for c in last.cases)
        when = last.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        title.update(f"{exercise} L{level}: {'passed' if last.passed else 'failed'} "
                     f"{ok}/{len(last.cases)} · graded {when} · g grades again")
        skipped = 0
        for case in last.cases:
            if str(case.get("kind") or "").startswith("skip"):
                skipped += 1  # one row for them all, as the live run shows them
                continue
            ratio = (case.get("metrics") or {}).get("median_ratio")
            passed = bool(case.get("passed"))
            table.add_row(
                "[green]pass[/]" if passed else "[red]FAIL[/]",
                _cut(str(case.get("id", "")), CASE_WIDTH),
                "",
                f"{ratio:.2f}× ref" if isinstance(ratio, int | float) else "",
                Text("" if passed else str(case.get("kind") or "").replace("_", " ")),
            )
        if skipped:
            table.add_row("[dim]skipped[/]", f"{skipped} more", "", "",
                          Text("not run: they would fail the same way"))
        seed = next((c["seed"] for c in last.cases if isinstance(c.get("seed"), int)), None)
        if not last.passed:  # after a restart "FAIL … wrong" said nothing of why
            self.write_log("This grading's messages are not kept: g grades again"
                           + (f"; S {seed} here, or `dojo lab grade {exercise} --level {level} "
                              f"--seed {seed}`, replays the same cases." if seed is not None
                              else "."))

    def _on_event(self, ev: Event, table: DataTable[str | Text], bar: ProgressBar) -> None:
        title = self.query_one("#lab-results-title", Static)
        if isinstance(ev, RunStarted):
            self._gpu = ev.device_note if ev.device == "cuda" else ""  # the card's name
            self.write_log(
                f"Grading {ev.exercise} on {ev.device}"
                f"{' (' + str(ev.device_note) + ')' if ev.device_note else ''}"
                f"{' at ' + ev.host if ev.host else ''}, seed {ev.seed}"
            )
        elif isinstance(ev, Notice):
            self.write_log(f"Note: {ev.message}")
        elif isinstance(ev, CaseStarted):
            bar.update(total=ev.total, progress=ev.index - 1)
            title.update(Text(f"{self._grading_title()}: case {ev.index}/{ev.total} · "
                              f"{ev.case} …"))
        elif isinstance(ev, CasePassed | CaseFailed):
            self._case_row(ev, table, bar)
        elif isinstance(ev, CasesSkipped):
            bar.update(progress=bar.total or bar.progress)
            table.add_row("[dim]skipped[/]", f"{len(ev.cases)} more", "", "",
                          Text("not run: they would fail the same way"))
            self.write_log(f"{len(ev.cases)} more not run: they would fail the same way — fix "
                           "the first one and grade again")
        elif isinstance(ev, LevelSummary):
            for members in self._signatures.values():
                if len(members) > 1:
                    self.write_log(f"{len(members) - 1} more failed the same way "
                                   f"({group_label(members)})")
            if self._not_run:
                self.write_log(not_run_note(self._not_run))
            self._signatures, self._not_run = {}, []
            verdict = "PASSED" if ev.passed else "FAILED"
            self.write_log(f"Level {ev.level}: {verdict} ({ev.passed_cases}/{ev.cases} "
                           f"{noun(_count(ev.cases), 'case')})")
            smallest = ev.smallest_failure
            if isinstance(smallest, dict):
                self.write_log(
                    f"  smallest failing input: {smallest.get('case')} "
                    + tidy_floats(json.dumps(smallest.get("params")))
                )
        elif isinstance(ev, Summary):
            self._summary(ev, title, bar)

    def _summary(self, ev: Summary, title: Static, bar: ProgressBar) -> None:
        self.last_summary = ev
        bar.update(total=max(1.0, bar.progress), progress=max(1.0, bar.progress))
        title.update(Text(f"{self._grading_title()}: {'passed' if ev.passed else 'failed'}"))
        self.write_log(
            ("All required cases pass." if ev.passed else "Some required cases fail.")
            + f" ({ev.duration_s:.1f} s, graded on {ev.device}"
            f"{' — ' + self._gpu if self._gpu else ''}{' at ' + ev.host if ev.host else ''})"
        )
        if ev.replay:  # the same hidden cases again: S sets the seed here, or the CLI
            self.write_log(f"Replay: {ev.replay}  (or S {ev.seed} here)")
        step = next_step(ev, key="n")
        if step:
            self.write_log(step)
        if ev.passed:  # a failure is said by the title and explained in the log, which a toast
            # in the bottom-right corner would cover at 80 columns
            self.notify(step or "Passed!", timeout=4)
        self.call_later(self.refresh_bindings)

    def _card_note(self, exercise: str, level: int) -> None:
        """After a pass: when the level's lab card comes back (the grader created or graded
        it, `lab.rebuild`)."""
        with self.lab() as lab:
            note = lab.card_note(exercise, level)
        if note:
            self.write_log(note)

    def _grading_title(self) -> str:
        return f"{self.shown_for[0]} L{self.shown_for[1]}" if self.shown_for else "grading"

    def _case_row(self, ev: CasePassed | CaseFailed, table: DataTable[str | Text],
                  bar: ProgressBar) -> None:
        """A table row per case; in the log, the first failure of each kind in full and the
        others with the same signature only counted (38 identical tracebacks help nobody)."""
        ratio = (ev.metrics or {}).get("median_ratio")
        speed = f"{ratio:.2f}× ref" if isinstance(ratio, int | float) else ""
        duration = ev.duration_s
        message = (tidy_floats(f"{ev.kind}: {ev.message or ''}")
                   if isinstance(ev, CaseFailed) else "")
        if bar.total is None:
            bar.advance(1)
        else:
            bar.update(progress=min(bar.total, bar.progress + 1))
        table.add_row(
            "[green]pass[/]" if isinstance(ev, CasePassed) else "[red]FAIL[/]",
            _cut(str(ev.case), CASE_WIDTH),
            f"{duration:.2f} s" if isinstance(duration, int | float) else "",
            speed,
            # learner-controlled text: never parsed as markup ('[/]' crashed the table)
            Text(message.splitlines()[0][:60] if message else ""),
        )
        if isinstance(ev, CasePassed):
            return
        if ev.kind == "skipped":  # not run: said once, counted, when the level ends
            self._not_run.append(ev)
            return
        same = self._signatures.setdefault(failure_signature(ev), [])
        same.append(ev)
        if len(same) > 1:
            return
        self.write_log(f"✗ {ev.case}: {message}")
        shown = [f"{name} {value}" for name, value in (("expected", ev.expected),
                                                        ("got", ev.got)) if value]
        if shown:
            self.write_log(tidy_floats("  " + "  ".join(shown)))
        if ev.traceback:
            for tb in str(ev.traceback).splitlines()[-6:]:
                self.write_log(f"  {tb}")


def _count(value: object) -> int:
    """A count from a grader event (an int there; anything else counts as many)."""
    return value if isinstance(value, int) else 0


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
