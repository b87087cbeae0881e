"""The grader's event stream: typed events (dataclasses below) that `grade()` emits and returns;
`dojo lab grade --json` prints each one's `to_dict()` as a JSON line (the TUI reads those).

The CLI's human report, `--json` and the TUI consume the same events, in this order::

    run_started   {exercise, title, solution, device, device_note, seed, levels: [{number, title,
                   gate, case_gates: {case id: gate}}], replay, host ("" unless graded on
                   another machine: --on HOST)}
    notice        {message}  (once per run: "sandbox: <which confinement ran>": "namespaces +
                   seccomp", "Landlock + seccomp" or "unconfined, at your request"; what it lacks)
    -- per level, per case --
    case_started  {level, case, description, size, required, timed, params, index, total}
                  (cases run cheapest first; index is 1-based: "case 3/28" for a progress bar)
    metrics       {level, case, metrics: {median_ratio, p95_ratio, learner_median_ms,
                   reference_median_ms, learner_p95_ms, reference_p95_ms, samples}}
                  (only for timed cases; sent before the case's verdict)
    case_passed   {level, case, required, duration_s, metrics, output, note (the verdict's
                   message, may be ""), report (show the note in the text report)}
    case_failed   {level, case, required, duration_s, metrics, output, kind, message, traceback,
                   params, size, expected, got, seed, replay}
    cases_skipped {level, cases: [ids], required (how many of them), reason}  (once, when a
                  level stops early: after a not_implemented failure, or when the module cannot
                  be loaded, the rest would fail the same way; they count as failed `skipped`)
    -- per level --
    level_summary {level, title, passed, cases, passed_cases, failed_required, failed_optional,
                   smallest_failure: {case, size, kind, message, params} | null, metrics
                   (worst median_ratio/p95_ratio over the timed cases), case_metrics
                   ({case id: metrics} for cases with timing or Verdict metrics), duration_s}
    summary       {exercise, device, seed, passed, levels: {"1": true, ...}, duration_s, replay,
                   stored, store_error, next_level, host}   (stored: written to the lab
                   attempts table by the lab service that recorded the grading — the judge
                   itself sends false; else store_error says why — grading never fails for
                   storage; host: "" unless graded on another machine, --on HOST;
                   next_level: {number, title, command} of the level after the highest one
                   graded when every graded level passed, else null)

`kind` of a failure: wrong (the answer is wrong), exception, not_implemented, exit (sys.exit),
memory, timeout, crash (segfault, os._exit), forbidden_import (the reference or another judge
module), unsendable (the result is not plain data, see lab/grader/codec.py), gate (a speed
bound in exercise.toml was missed), run_timeout (the run's wall-clock budget ran out before this
case), skipped (not run: the learner's code already timed out/crashed/ran out of memory 3
times in this run), grader_error (the reference or the grading spec itself failed: a platform
bug), own_model (the expected values computed with the learner's own --target/--draft
checkpoint in the grader's sandboxed models child failed or ran out of memory), protocol
(the child wrote something that is not a message on its result pipe), limit (a limit of the
sandbox refused a step: a file past the size limit, too many open files), output
(printed more than the output limit: the child was stopped), processes (started more processes
or threads than the limit), disk (wrote more than the limit to the workspace folder: stopped),
sandbox (the sandbox could not confine itself: nothing ran).
`expected`/`got` are short reprs (strings); `output` is the learner's captured stdout+stderr for
that case, trimmed to its tail. Every value is JSON-native; unknown keys may be added later, so
consumers should ignore keys they do not know.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar

EVENT_TYPES = (
    "run_started",
    "notice",
    "case_started",
    "metrics",
    "case_passed",
    "case_failed",
    "cases_skipped",
    "level_summary",
    "summary",
)
FAILURE_KINDS = (
    "wrong",
    "exception",
    "not_implemented",
    "exit",
    "memory",
    "timeout",
    "crash",
    "forbidden_import",
    "gate",
    "run_timeout",
    "skipped",
    "grader_error",
    "own_model",
    "protocol",
    "unsendable",
    "limit",
    "output",
    "processes",
    "disk",
    "sandbox",
)
REPR_LIMIT = 400


class _Full(Exception):
    """The text reached its limit: stop walking the value."""


def short_repr(value: object, limit: int = REPR_LIMIT) -> str:
    """repr() cut to `limit`, in time proportional to `limit`, not to the value: lists, tuples
    and dicts are walked only until the text is long enough, and a large tensor or array is
    described by its shape (a passing case's record of 8,000 tensors would otherwise take
    seconds to print just to be cut). Never raises (a learner's value may be a 5000-digit int,
    over Python's int-to-str limit, or have a __repr__ that throws)."""
    parts: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size > limit:
            raise _Full

    def walk(v: object) -> None:
        kind = type(v)
        if isinstance(v, list | tuple) and kind in (list, tuple):
            put("[" if kind is list else "(")
            for i, item in enumerate(v):
                if i:
                    put(", ")
                walk(item)
            put("]" if kind is list else ("," if len(v) == 1 else "") + ")")
        elif isinstance(v, dict) and kind is dict:
            put("{")
            for i, (key, value) in enumerate(v.items()):
                if i:
                    put(", ")
                walk(key)
                put(": ")
                walk(value)
            put("}")
        else:
            put(_leaf(v, limit))

    try:
        walk(value)
    except _Full:
        pass
    except RecursionError:
        parts.append("…")
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _leaf(value: object, limit: int) -> str:
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit])
    shape, numel = getattr(value, "shape", None), getattr(value, "size", None)
    module = type(value).__module__.split(".")[0]
    if module in ("torch", "numpy") and shape is not None:
        count = value.numel() if module == "torch" else numel  # type: ignore[attr-defined]
        if isinstance(count, int) and count > 64:
            return (f"{'tensor' if module == 'torch' else 'array'}(shape={tuple(shape)}, "
                    f"dtype={getattr(value, 'dtype', '?')})")
    try:
        return repr(value)
    except Exception as exc:
        if isinstance(value, int):
            return f"<int with about {value.bit_length() * 0.30103:.0f} digits>"
        return f"<{type(value).__name__} whose repr() failed: {type(exc).__name__}>"


@dataclass(frozen=True)
class _Event:
    EVENT: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`--json`, the TUI): {"event": name, **fields}."""
        return {"event": self.EVENT, **asdict(self)}


@dataclass(frozen=True)
class RunStarted(_Event):
    EVENT: ClassVar[str] = "run_started"
    exercise: str
    title: str
    solution: str
    device: str
    device_note: str
    seed: int
    replay: str
    levels: list[dict[str, Any]]
    host: str = ""  # the SSH host it ran on (`dojo lab grade --on`); "" here


@dataclass(frozen=True)
class Notice(_Event):
    EVENT: ClassVar[str] = "notice"
    message: str


@dataclass(frozen=True)
class CaseStarted(_Event):
    EVENT: ClassVar[str] = "case_started"
    level: int
    case: str
    description: str
    size: int
    required: bool
    timed: bool
    params: dict[str, Any]
    index: int = 1
    total: int = 1


@dataclass(frozen=True)
class Metrics(_Event):
    EVENT: ClassVar[str] = "metrics"
    level: int
    case: str
    metrics: dict[str, float]


@dataclass(frozen=True)
class _CaseEnded(_Event):
    """What every finished case reports, passed or not."""

    level: int
    case: str
    required: bool
    duration_s: float
    metrics: dict[str, float]
    output: str


@dataclass(frozen=True)
class CasePassed(_CaseEnded):
    EVENT: ClassVar[str] = "case_passed"
    note: str
    report: bool


@dataclass(frozen=True)
class CaseFailed(_CaseEnded):
    EVENT: ClassVar[str] = "case_failed"
    kind: str
    message: str
    traceback: str
    params: dict[str, Any]
    size: int
    expected: str
    got: str
    seed: int
    replay: str


@dataclass(frozen=True)
class CasesSkipped(_Event):
    EVENT: ClassVar[str] = "cases_skipped"
    level: int
    cases: list[str]
    required: int
    reason: str


@dataclass(frozen=True)
class LevelSummary(_Event):
    EVENT: ClassVar[str] = "level_summary"
    level: int
    title: str
    passed: bool
    cases: int
    passed_cases: int
    failed_required: int
    failed_optional: int
    smallest_failure: dict[str, Any] | None
    metrics: dict[str, float]
    duration_s: float
    case_metrics: dict[str, dict[str, float]]


@dataclass(frozen=True)
class Summary(_Event):
    EVENT: ClassVar[str] = "summary"
    exercise: str
    device: str
    seed: int
    passed: bool
    levels: dict[str, bool]
    duration_s: float
    replay: str
    stored: bool
    store_error: str
    next_level: dict[str, Any] | None = None
    host: str = ""  # the SSH host it ran on (`dojo lab grade --on`); "" here


Event = (RunStarted | Notice | CaseStarted | Metrics | CasePassed | CaseFailed | CasesSkipped
         | LevelSummary | Summary)
assert tuple(cls.EVENT for cls in (RunStarted, Notice, CaseStarted, Metrics, CasePassed,
                                   CaseFailed, CasesSkipped, LevelSummary,
                                   Summary)) == EVENT_TYPES


def to_json(event: Event | dict[str, Any]) -> str:
    """One line of JSON; anything not JSON-native is stringified rather than crashing."""
    data = event if isinstance(event, dict) else event.to_dict()
    return json.dumps(data, default=str, ensure_ascii=False)


_EMPTY: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False}


def _empty(annotation: str) -> Any:
    """The value of a field a reader did not send: None where allowed, else the type's zero."""
    if "None" in annotation:
        return None
    head = annotation.split("[", 1)[0].strip()
    return [] if head == "list" else {} if head == "dict" else _EMPTY.get(head)


def from_dict(data: dict[str, Any]) -> Event | None:
    """The typed event behind one `--json` line (`to_dict`'s inverse), for readers of the
    stream (the TUI through `trainer.core.lab`); None for an event name it does not know.

    Tolerant as the format promises: unknown keys are ignored and a missing field gets its
    default or its type's empty value, so a reader keeps working across versions."""
    cls = _BY_NAME.get(str(data.get("event")))
    if cls is None:
        return None
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in data:
            values[f.name] = data[f.name]
        elif f.default is MISSING:
            values[f.name] = _empty(str(f.type))
    return cls(**values)


_BY_NAME: dict[str, type[Event]] = {
    cls.EVENT: cls for cls in (RunStarted, Notice, CaseStarted, Metrics, CasePassed, CaseFailed,
                               CasesSkipped, LevelSummary, Summary)}
