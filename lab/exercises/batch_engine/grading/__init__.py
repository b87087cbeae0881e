"""Grading for `batch-engine` (parent side; see statement.md for the contract it enforces).

`drive.run` replays a case in the sandbox child and returns the raw record; `checks` judges it,
in an order that names the first cause. One module per level holds that level's cases and the
checks of its feature, with the boundaries, special values and feature pairs it covers listed in
its docstring; `common` holds what they share, `probe_checks` reads the probe's raw call record.
This module only dispatches.

Three kinds of case, all replayed by `harness.replay` on an injected clock:
- probe cases: the grader's stub model (probe.py) records every forward with its virtual time;
  the checks read that record for malformed inputs and the batching policy (cap, size-or-wait,
  FIFO by admitting step, re-formed every step, the KV cache reused, KV budget: held, used for
  admission, preemption) and compare outputs with `probe.solo`;
- target cases: a real model in fp32, the shipped pycode target or the learner's `--target`
  checkpoint; their requests name spans of prompts.txt in tokens and stops by role, resolved by
  the child with that model's tokenizer (`targets.resolve_requests`); every request's tokens
  must equal the reference's (which equal solo greedy generation), a divergence excused only at
  a near-tie (logged in the verdict);
- load cases: a seeded Poisson trace on the probe's virtual clock, learner vs reference; reports
  tok/s and p50/p95 TTFT and end-to-end latency, and `p95_ratio` (the level 2 gate).
"""

from __future__ import annotations

import importlib
from typing import Any

from lab.exercises.batch_engine.grading import checks, level1, level2, level3, level4, truth
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.batch_engine"
LEVELS = {1: level1, 2: level2, 3: level3, 4: level4}


def cases(level: int, seed: int) -> list[Case]:
    return LEVELS[level].cases(seed) if level in LEVELS else []


def expected(case: Case, ctx: RunContext) -> Any:
    """The reference engine's run of the case and, for a target case, each request's solo
    greedy decoding by the model's own forward (`truth`), which the outputs are judged by."""
    from lab.exercises.batch_engine import drive

    run: dict[str, Any] = drive.run(importlib.import_module(REFERENCE), case, ctx)
    if case.params["model"] == "target":
        run["truth"] = truth.solo_truths(run)
    return run


def check(case: Case, got: Any, expected: Any) -> Verdict:
    return checks.check(case, got, expected)
