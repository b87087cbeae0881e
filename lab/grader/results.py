"""What a grading returns: per case, per level, and for the whole run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.grader import events
from lab.grader.api import Case


@dataclass
class CaseResult:
    case: Case
    passed: bool
    kind: str = ""
    message: str = ""
    traceback: str = ""
    output: str = ""
    expected: str = ""
    got: str = ""
    duration_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class LevelResult:
    level: int
    results: list[CaseResult]
    duration_s: float

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results if r.case.required)

    def smallest_failure(self) -> CaseResult | None:
        failed = [r for r in self.results if not r.passed]
        failed.sort(key=lambda r: (r.kind == "skipped", not r.case.required, r.case.size,
                                   r.case.id))  # a case that ran before one that did not
        return failed[0] if failed else None

    def metrics(self) -> dict[str, float]:
        """Worst ratio over the timed cases (the figure a gate and `lab list` care about)."""
        out: dict[str, float] = {}
        for r in self.results:
            for key in ("median_ratio", "p95_ratio"):
                if key in r.metrics:
                    out[key] = max(out.get(key, 0.0), r.metrics[key])
        return out


@dataclass
class GradeResult:
    exercise: str
    device: str
    seed: int
    solution: Path
    levels: list[LevelResult]
    duration_s: float
    sandboxes_started: int = 0  # 1 unless the learner's code got a child killed or crashed
    events: list[events.Event] = field(default_factory=list)  # everything grade() emitted
    attempt_metrics: dict[str, float] = field(default_factory=dict)  # stored with each level

    @property
    def passed(self) -> bool:
        return all(lvl.passed for lvl in self.levels)

