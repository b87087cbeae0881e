"""What the levels share: the reference's name, the false-failure budget, tensor comparison,
and the inputs every level's call must leave untouched."""

from __future__ import annotations

from typing import Any

import torch

from lab.exercises import untouched
from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.sampling"

# A correct sampler fails level 3 with probability <= FAMILY_ALPHA (Bonferroni over its tests).
FAMILY_ALPHA = 1e-3


def as_tensor(got: Any) -> torch.Tensor | str:
    """The learner's returned tensor on the CPU, or a message saying what came back instead."""
    out = got.get("out") if isinstance(got, dict) else got
    if isinstance(out, dict) and "sparse" in out:
        return dense(out["sparse"])
    if isinstance(out, dict) and "not_a_tensor" in out:
        return f"must return a torch.Tensor, returned a {out['not_a_tensor']}"
    if not isinstance(out, torch.Tensor):
        return f"must return a torch.Tensor, returned {type(out).__name__}"
    return out.detach().cpu()


def fmt(t: torch.Tensor, ids: list[int]) -> str:
    return "[" + ", ".join(f"{i}: {float(t[i]):.6g}" for i in ids) + "]"


def diff_ids(a: torch.Tensor, b: torch.Tensor, limit: int = 6) -> list[int]:
    """Ids where two rows differ (bitwise; -inf == -inf)."""
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    return (~same).nonzero().flatten()[:limit].tolist()


def dense(sp: dict[str, Any]) -> torch.Tensor:
    """The drive's lossless sparse form (entries that are not -inf) back to a tensor."""
    dtype = getattr(torch, str(sp["dtype"]))
    out = torch.full([int(n) for n in sp["shape"]], float("-inf"), dtype=dtype)
    flat = out.view(-1)
    flat[sp["idx"].cpu().long()] = sp["val"].cpu().to(dtype)
    return out


FUNCTIONS = {1: "process_logits", 2: "process_batch", 3: "sample", 4: "generate"}


def untouched_inputs(case: Case, got: Any) -> Verdict | None:
    """A failed verdict naming the inputs the learner's call changed in place, else None."""
    if not isinstance(got, dict):
        return None
    paths = list(got.get("touched") or [])
    for run in got.get("runs", []) if case.level == 3 else []:
        paths += [p for p in run.get("touched", []) if p not in paths]
    if not paths:
        return None
    return Verdict(False, untouched.message(FUNCTIONS[case.level], paths))
