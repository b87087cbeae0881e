"""The speed case of levels 2-4: on CUDA, the learner's kernel timed against a plain torch decode
and against the bandwidth roofline (drive -> gpu_timing.py measures; this module judges).

Decode attention reads every cached K and V byte once and does little arithmetic per byte, so
its floor is memory bandwidth: roofline time = KV bytes per call / the device-to-device copy
bandwidth measured in the same run. The verdict reports the kernel's time against torch's and
the roofline's share of it; the level's gate (exercise.toml) bounds both, on CUDA only. On a
CPU the drive reports that the speed part needs a GPU and the case passes with that note.
"""

from __future__ import annotations

import secrets
import statistics
from typing import Any

from lab.exercises.decode_attention.gpu_timing import speed_inputs
from lab.exercises.decode_attention.grading.common import answered, attend, check_tensor
from lab.grader.api import Case, Verdict

SHAPES: dict[str, dict[str, Any]] = {
    # 16 sequences of 2-4k tokens: 128 MiB of fp16 K/V per call, past any L2
    "contiguous": {"batch": 16, "min_len": 2048, "max_len": 4096},
    "paged": {"batch": 16, "min_len": 2048, "max_len": 4096, "block_size": 16},
    # 4 long sequences: too few (b, h) programs to fill an H100 without splitting them
    "split": {"batch": 4, "min_len": 12288, "max_len": 16384, "block_size": 16,
              "num_splits": 16},
}
LEVEL_KIND = {"contiguous": "attention", "paged": "paged", "split": "flash"}


def case(level: int, layout: str) -> Case:
    params = {"kind": "speed", "layout": layout, "level_kind": LEVEL_KIND[layout],
              "seed": 900 + level, "heads": 32, "kv_heads": 8, "head_dim": 128,
              "dtype": "float16", **SHAPES[layout]}
    return Case(id=f"speed-{layout}", level=level, params=params, size=10**9, timeout_s=120.0,
                report=True, description="CUDA only: time against torch's decode and the "
                "bandwidth roofline")


CHECKED = 4  # timed outputs checked per grading, drawn after the calls ran


def expected(case: Case, device: str) -> Any:
    """Where `check` computes the answers for the timed calls it picks (float32 on the GPU);
    None on a CPU, where the drive times nothing."""
    return {"device": device} if device == "cuda" else None


def answer(p: dict[str, Any], device: str, query_seed: int | None = None) -> Any:
    """Attention over the speed inputs `p` describes (the query of `query_seed`'s call), in
    float32 on `device`, as float64."""
    import torch

    args = speed_inputs(p, device, query_seed)
    q = args["q"]
    if "k" in args:
        lens = args["seq_lens"].tolist()
        keys = [args["k"][b, :n] for b, n in enumerate(lens)]
        values = [args["v"][b, :n] for b, n in enumerate(lens)]
    else:
        bs = args["k_cache"].shape[1]
        lens = args["context_lens"].tolist()
        tables = args["block_tables"].long()
        keys = [args["k_cache"][tables[b, :-(-n // bs)]].flatten(0, 1)[:n]
                for b, n in enumerate(lens)]
        values = [args["v_cache"][tables[b, :-(-n // bs)]].flatten(0, 1)[:n]
                  for b, n in enumerate(lens)]
    return attend(q, keys, values, args["scale"], dtype=torch.float32).double().cpu()


def check_outputs(case: Case, got: Any, expected: Any) -> Verdict:
    """A random subset of the timed calls' outputs (drawn here, after the calls ran) against
    the answers for their own queries: a launcher that skips or repeats work on some calls
    fails as one that is wrong on all of them."""
    if not isinstance(expected, dict):
        return Verdict(False, "internal: no device to compute the speed case's answers on")
    outs, seeds = got.get("outs"), got.get("seeds")
    if not isinstance(outs, list) or not isinstance(seeds, list) or not outs \
            or len(outs) != len(seeds):
        return Verdict(False, "internal: the timed calls' outputs did not come back")
    written = [i for i, o in enumerate(outs) if o is not None]
    picked = sorted(secrets.SystemRandom().sample(written, min(CHECKED, len(written))))
    for i in picked:
        what = f"the output of timed call {i + 1} of {len(outs)} (its own query)"
        if isinstance(outs[i], str):
            return Verdict(False, f"{what}: returned {outs[i]}, not a torch.Tensor")
        verdict = check_tensor(case, outs[i], answer(case.params, expected["device"],
                                                     int(seeds[i])),
                               what=what, dtype=case.params["dtype"])
        if not verdict.passed:
            return verdict
    return Verdict(True)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    early = answered(case, got, case.params["level_kind"])
    if early is not None:
        return early
    out = check_outputs(case, got, expected)
    if not out.passed:
        return out
    learner = statistics.median(got["learner_ms"])
    baseline = statistics.median(got["torch_ms"])
    copy = statistics.median(got["copy_ms"])
    bandwidth = got["copy_bytes"] / (copy * 1e-3)  # bytes/s
    roofline = got["kv_bytes"] / bandwidth * 1e3  # ms
    share = roofline / learner
    ratio = learner / baseline
    return Verdict(True, f"{learner:.3f} ms per call (median of {len(got['learner_ms'])}); "
                         f"torch {baseline:.3f} ms: {ratio:.2f}x torch's time; roofline "
                         f"{roofline:.3f} ms ({got['kv_bytes'] / 2**20:.0f} MiB of K/V at the "
                         f"copy bandwidth measured now, {bandwidth / 1e9:.0f} GB/s): "
                         f"{share:.0%} of it",
                   metrics={"torch_ratio": ratio, "bandwidth_share": share,
                            "median_ms": learner})
