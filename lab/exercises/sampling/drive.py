"""sampling, child side: call the learner's functions on a case's inputs, return raw outputs.

Runs in the learner's sandbox. It returns only what the learner's code returned (processed
logits, sampled tokens, completions) plus the generators' states after a call and which of its
inputs the call changed in place (`touched`, against a private copy: `lab.exercises.untouched`)
- never counts, statistics or verdicts: `grading/` rebuilds the inputs in the parent and judges
there.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from lab.exercises.sampling import inputs, lm
from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

# the inputs recipes, the level-4 model wrapper, and the shipped model's loader
CHILD_MODULES = ("lab.exercises.sampling.inputs", "lab.exercises.sampling.lm", "lab.models",
                 "lab.models.lean_llama", "lab.models.loading", "lab.exercises.untouched")


def warm(device: str) -> None:
    """Load the shipped model ahead of a grading (its transformers imports take seconds)."""
    lm.shipped(device)


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    """Execute one case for `solution`; plain data only."""
    if ctx.device == "cpu":
        torch.set_num_threads(1)
    p = case.params
    if case.level == 1:
        row, prm, prompt, output = inputs.row_inputs(p, ctx.device)
        args = {"logits": row, "params": prm, "prompt": prompt, "output": output}
        kept = keep(args)
        out = _tensor(solution.process_logits(*args.values()))
        return {"out": out, "touched": changed(args, kept)}
    if case.level == 2:
        p = {**p, "seed": ctx.seed} if case.timed else p
        logits, params, prompts, outputs = inputs.batch_inputs(p, ctx.device)
        args = {"logits": logits, "params": params, "prompts": prompts, "outputs": outputs}
        kept = keep(args)
        got = solution.process_batch(*args.values())
        return {"out": _sparse(got) if case.timed else _tensor(got),
                "touched": changed(args, kept)}
    if case.level == 3:
        return _level3(solution, p, ctx.device)
    if case.level == 4:
        model: Any = lm.shipped(ctx.device, (ctx.model_paths or {}).get("target"))
        if "probe" in p:  # a tie or a repeated token the raw model never produces
            model = lm.Probe(model, **p["probe"])
        requests = [dict(r) for r in p["requests"]]
        kept = keep({"requests": requests})
        out = solution.generate(model, requests)
        return {"out": out, "touched": changed({"requests": requests}, kept)}
    raise ValueError(f"no level {case.level}")


def _tensor(x: Any) -> Any:
    """A returned tensor as is (detached, on its device); anything else as its type's name."""
    if isinstance(x, torch.Tensor):
        return x.detach().contiguous()
    return {"not_a_tensor": type(x).__name__}


def _sparse(x: Any) -> Any:
    """A returned tensor, losslessly, as its entries that are not -inf (indices and values):
    the timed case's outputs are mostly -inf, and a timing batch of dense 8 MB answers would
    outgrow what a sandbox reply may carry."""
    if not isinstance(x, torch.Tensor):
        return {"not_a_tensor": type(x).__name__}
    t = x.detach()
    flat = t.reshape(-1)
    idx = (flat != float("-inf")).nonzero().flatten()
    return {"sparse": {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                       "idx": idx, "val": flat[idx]}}


def _generators(seeds: list[int], device: str) -> list[torch.Generator]:
    out = []
    for s in seeds:
        g = torch.Generator(device=device)
        g.manual_seed(int(s))
        out.append(g)
    return out


def _level3(solution: ModuleType, p: dict[str, Any], device: str) -> Any:
    """One call per step of each batch in `p["batches"]`, a fresh generator per row from its
    seed; the global RNG is reseeded differently before each batch (it must not matter)."""
    runs = []
    for bi, batch in enumerate(p["batches"]):
        torch.manual_seed(1000 + bi)
        gens = _generators(inputs.seeds(batch), device)
        states = batch.get("states", True)
        before = [g.get_state() for g in gens] if states else []
        steps, touched = [], []
        for step in range(int(batch.get("steps", 1))):
            logits, params, prompts, outputs = inputs.batch_inputs(
                inputs.step_batch(batch, step), device)
            args = {"logits": logits, "params": params, "prompts": prompts, "outputs": outputs}
            kept = keep(args)
            got = solution.sample(*args.values(), gens)
            touched += changed(args, kept)
            steps.append([int(t) for t in got] if isinstance(got, list | tuple | torch.Tensor)
                         else {"not_a_list": type(got).__name__})
        after = [g.get_state() for g in gens] if states else []
        runs.append({"tokens": steps, "states_before": before, "states": after,
                     "touched": sorted(set(touched))})
    return {"runs": runs}
