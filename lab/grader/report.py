"""Render the grader's event stream as a human report (the CLI's default output).

Passing cases stay quiet; a failed level shows its smallest failing case in full (input,
expected, got, why, the learner's traceback and output) and names the others briefly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lab.grader.events import Event

MAX_OTHER_FAILURES = 8


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.rstrip().splitlines())


class TextReport:
    """Callable event sink: `grade(..., emit=TextReport(click.echo))`."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self.failures: dict[int, list[dict[str, Any]]] = {}
        self.seed: int | None = None
        self.replay = ""

    def __call__(self, event: Event) -> None:
        handler = getattr(self, "_" + event.EVENT, None)
        if handler is not None:
            handler(event.to_dict())

    def _run_started(self, e: dict[str, Any]) -> None:
        self.seed, self.replay = e["seed"], e["replay"]
        self.write(f"{e['exercise']} — {e['title']}")
        self.write(f"  file:   {e['solution']}")
        self.write(f"  device: {e['device']} ({e['device_note']}) · seed {e['seed']}")

    def _notice(self, e: dict[str, Any]) -> None:
        self.write(f"  note:   {e['message']}")

    def _metrics(self, e: dict[str, Any]) -> None:
        m = e["metrics"]
        if "median_ratio" in m:
            self.write(
                f"  ⏱ {e['case']}: {m['median_ratio']:.2f}× the reference's median time "
                f"({m['learner_median_ms']:.3g} ms vs {m['reference_median_ms']:.3g} ms), "
                f"p95 {m['p95_ratio']:.2f}×"
            )

    def _case_passed(self, e: dict[str, Any]) -> None:
        if e.get("report") and e.get("note"):
            self.write(f"  ◦ {e['case']}: {e['note']}")

    def _case_failed(self, e: dict[str, Any]) -> None:
        self.failures.setdefault(int(e["level"]), []).append(e)

    def _level_summary(self, e: dict[str, Any]) -> None:
        level, total, ok = int(e["level"]), e["cases"], e["passed_cases"]
        head = f"Level {level} · {e['title']}: "
        if e["passed"]:
            optional = f", {e['failed_optional']} optional failed" if e["failed_optional"] else ""
            self.write(f"✓ {head}PASSED ({ok}/{total} cases{optional}, {e['duration_s']:.1f} s)")
        else:
            self.write(f"✗ {head}FAILED ({ok}/{total} cases passed)")
        failures = sorted(self.failures.get(level, []),
                          key=lambda f: (not f["required"], f["size"], f["case"]))
        if not failures:
            return
        self._detail(failures[0])
        others = failures[1:]
        if others:
            by_kind: dict[str, list[str]] = {}
            for f in others:
                by_kind.setdefault(f["kind"], []).append(f["case"])
            self.write(f"    {len(others)} more failed:")
            for kind, names in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
                shown = ", ".join(names[:MAX_OTHER_FAILURES])
                more = len(names) - MAX_OTHER_FAILURES
                self.write(f"      {kind} ×{len(names)}: {shown}"
                           + (f" … (+{more})" if more > 0 else ""))

    def _detail(self, f: dict[str, Any]) -> None:
        optional = "" if f["required"] else " (optional)"
        self.write(f"    smallest failing case{optional}: {f['case']} [{f['kind']}]")
        self.write("      input:    " + json.dumps(f["params"], default=str))
        if f.get("expected"):
            self.write(f"      expected: {f['expected']}")
        if f.get("got"):
            self.write(f"      got:      {f['got']}")
        self.write(f"      why:      {f['message']}")
        if f.get("traceback"):
            self.write("      traceback (your code):")
            self.write(_indent(f["traceback"], "        "))
        if f.get("output"):
            self.write("      your output (trimmed):")
            self.write(_indent(f["output"], "        | "))
        self.write(f"      replay:   {f['replay']}")

    def _summary(self, e: dict[str, Any]) -> None:
        failed = [lvl for lvl, ok in e["levels"].items() if not ok]
        verdict = "PASSED" if e["passed"] else f"FAILED (level {', '.join(failed)})"
        self.write(f"{verdict} in {e['duration_s']:.1f} s on {e['device']} · replay: {e['replay']}")
        if e.get("store_error") and "missing" not in e["store_error"]:
            self.write(f"(not saved: {e['store_error']})")
