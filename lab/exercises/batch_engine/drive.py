"""batch-engine, child side: replay a case's timed requests against the learner's engine and
return what happened as plain data (the grader judges it in `grading`, in its own process).

The returned dict: `submitted` (submit time per request), `rejected` ({index as str: the
ValueError's message}), `events` ([time, "token" | "finish" | "stray", request index, payload]),
`after_shutdown` (index into events), `cancels` ([time, index, what cancel returned, events
before and after the call]), `empty_step` ([what step() returned before any submit, model
calls it made]), `steps`,
`multi_call_steps`, `error_steps`, `stuck` / `crash` (why the replay stopped early, or ""), and
`calls`: the probe's raw record of every forward (ids, positions, mask and the cache columns it was
handed, as tensors; empty with the real target). Target cases also return the requests as
resolved in that model's tokens (`requests`) and the checkpoint used (`target`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from lab.exercises.batch_engine import harness, probe
from lab.exercises.batch_engine.targets import prompt_tokens, resolve_requests
from lab.grader.api import Case, RunContext

CHILD_MODULES = (
    "lab.exercises.batch_engine.harness",
    "lab.exercises.batch_engine.probe",
    "lab.exercises.batch_engine.runtime",
    "lab.exercises.batch_engine.targets",
    "lab.models",
    "lab.models.lean_llama",
    "lab.models.loading",
    "lab.models.plain_llama",
    "lab.models.windows",
)


def warm(device: str) -> None:
    """Load the shipped target and its tokenised prompts ahead of a grading (the transformers
    imports take seconds)."""
    from lab.exercises.batch_engine.runtime import load_target

    load_target(device, "float32")
    prompt_tokens(None)


def run(solution: ModuleType, case: Case, ctx: RunContext) -> dict[str, Any]:
    p = case.params
    requests = p["requests"]
    clock = harness.FakeClock()
    model: Any
    target = (ctx.model_paths or {}).get("target")
    if p["model"] == "probe":  # a fresh probe per run: its record starts empty
        model = probe.ProbeModel(clock=clock, clock_advance=clock.advance,
                                 max_positions=p.get("max_positions", probe.MAX_POSITIONS),
                                 zero_id=p.get("zero_id", -1))
    else:
        from lab.exercises.batch_engine.runtime import load_target

        model = load_target(ctx.device, "float32", target)
        requests = resolve_requests(requests, target)
    rec = harness.replay(
        solution.Engine, model, harness.arrivals_from(requests),
        max_batch_size=p["max_batch_size"], max_wait_s=p["max_wait_s"],
        continuous=p["continuous"], kv_budget_tokens=p["kv_budget_tokens"], clock=clock,
        advance=clock.advance, shutdown_at=p["shutdown_at"],
        cancels=[(c[0], c[1]) for c in p.get("cancels", [])],
    )
    out = dict(vars(rec))
    out["rejected"] = {str(i): message for i, message in rec.rejected.items()}
    out["cancels"] = [[t, i, _plain(result), a, b] for t, i, result, a, b in rec.cancels]
    out["empty_step"] = [_plain(rec.empty_step[0]), rec.empty_step[1]]
    if p["model"] == "target":  # the grader reads the requests as this run resolved them
        out["requests"], out["target"] = requests, target
    return out


def _plain(value: Any) -> Any:
    """What the engine returned, as plain data (anything but a bool, int or None as its repr)."""
    return value if value is None or isinstance(value, bool | int) else repr(value)[:200]
