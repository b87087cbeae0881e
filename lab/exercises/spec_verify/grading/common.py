"""What several levels' checks share: the false-failure budget, the near-tie rule, the reference,
and the target's own greedy decoding computed in the parent."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.lm import vocab_of
from lab.grader.api import RunContext, Verdict

REFERENCE = "lab.reference.spec_verify"

# A correct sampler fails one level's grading run with probability <= FAMILY_ALPHA: every
# chi-square test runs at FAMILY_ALPHA / (number of tests in the level) (Bonferroni).
FAMILY_ALPHA = 1e-3
# A greedy divergence is excused only where the target's top-2 logits are this close (fp32).
NEAR_TIE = 1e-4


def reference() -> ModuleType:
    return importlib.import_module(REFERENCE)


def is_tokens(out: Any) -> bool:
    return isinstance(out, list) and all(isinstance(t, int) and not isinstance(t, bool)
                                         for t in out)


def first_mismatch(a: list[int] | tuple[int, ...], b: list[int]) -> int | None:
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return None


def greedy_with_gaps(p: dict[str, Any], ctx: RunContext, n: int) -> dict[str, Any]:
    """The target's plain greedy decoding of a case's prompt, per position the top-2 logit gap
    and the runner-up, and the case's EOS id: what greedy outputs are judged against."""
    device = ctx.device if p["model"] == "shipped" else "cpu"
    target, _, prompt, eos = inputs.models(p, device, ctx.model_paths)
    trace = inputs.greedy(target, prompt, n)
    return {"plain": trace.tokens, "gaps": trace.gaps, "second": trace.second, "eos": eos,
            "prompt": prompt, "V": vocab_of(target)}


def greedy_equal(out: list[int], want: list[int], exp: dict[str, Any], note: str,
                 metrics: dict[str, float], what: str) -> Verdict:
    """out == want, a divergence excused only at a near tie of the target's top-2 logits."""
    if out == want:
        return Verdict(True, note, metrics)
    i = first_mismatch(out, want)
    if i is None:
        return Verdict(False, f"returned {len(out)} tokens, expected {len(want)} (got {out}, "
                              f"expected {want})")
    gap = exp["gaps"][i]
    if gap < NEAR_TIE and out[i] == exp["second"][i]:
        return Verdict(True, f"diverged at token {i} where the target's top-2 logits differ by "
                             f"{gap:.1e} < {NEAR_TIE:g} (near tie, excused). {note}", metrics)
    return Verdict(False, f"{what} differs from the target's plain greedy decoding at token {i}: "
                          f"expected {want[i]}, got {out[i]} (top-2 gap {gap:.3g}); expected "
                          f"{want}, got {out}")
