"""Level 1 — column- and row-parallel linear layers.

Boundaries and feature pairs (one case each; W = world size, rows of x = 3):
- column, gather_output=True at W = 2 and W = 4 (with and without bias): one all-gather, output
  [rows, out] equal to the single-process layer; the shard is rows [r*out/W, (r+1)*out/W);
- column, gather_output=False at W = 4: no collective, output [rows, out/W] = this rank's slice;
- row, input_is_parallel=True at W = 2 with bias: one all-reduce, bias added once;
- row, input_is_parallel=False at W = 4 (the layer slices x itself), out = 5 (odd out is fine:
  only `in` is split);
- W = 1 for both (a single process: the layer is the plain one);
- refusals: column out = 10 at W = 4, row in = 6 at W = 4 -> ValueError naming the sizes.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.tensor_parallel import runtime
from lab.exercises.tensor_parallel.grading.common import (
    Fail,
    close,
    expect_collectives,
    ranks_ok,
)
from lab.grader.api import Case


def _linear(cid: str, layer: str, world: int, n_in: int, n_out: int, bias: bool, flag: bool,
            seed: int, desc: str) -> Case:
    return Case(cid, 1, {"kind": "linear", "layer": layer, "world": world, "in": n_in,
                         "out": n_out, "bias": bias, "flag": flag, "rows": 3, "seed": seed},
                size=world * 10 + n_in, timeout_s=20.0, description=desc)


def cases(seed: int) -> list[Case]:
    s = seed % 100_000
    return [
        _linear("column-gather-w2", "column", 2, 16, 8, True, True, s + 1,
                "column-parallel, W = 2, gather_output=True: one all-gather"),
        _linear("column-local-w4", "column", 4, 12, 16, True, False, s + 2,
                "column-parallel, W = 4, gather_output=False: no collective, this rank's slice"),
        _linear("column-gather-w4-nobias", "column", 4, 8, 12, False, True, s + 3,
                "column-parallel, W = 4, no bias, gathered"),
        _linear("row-parallel-input-w2", "row", 2, 8, 6, True, True, s + 4,
                "row-parallel, W = 2, x already split: one all-reduce, bias added once"),
        _linear("row-full-input-w4", "row", 4, 16, 5, True, False, s + 5,
                "row-parallel, W = 4, full x (the layer takes its slice), out = 5"),
        _linear("column-w1", "column", 1, 6, 4, True, True, s + 6, "W = 1: the plain layer"),
        _linear("row-w1", "row", 1, 6, 4, True, True, s + 7, "W = 1: the plain layer"),
        Case("refuse-column-10-by-4", 1, {"kind": "refuse", "layer": "column", "world": 4,
                                          "in": 8, "out": 10, "bias": True, "flag": True,
                                          "rows": 1, "seed": s + 8},
             size=5, timeout_s=20.0, description="out_features 10 at W = 4: refuse"),
        Case("refuse-row-6-by-4", 1, {"kind": "refuse", "layer": "row", "world": 4, "in": 6,
                                      "out": 8, "bias": False, "flag": True, "rows": 1,
                                      "seed": s + 9},
             size=6, timeout_s=20.0, description="in_features 6 at W = 4: refuse"),
    ]


def expected(case: Case) -> Any:
    import torch.nn.functional as F

    p = case.params
    if p["kind"] == "refuse":
        return None
    inp = runtime.linear_inputs(p)
    return {**inp, "full": F.linear(inp["x"], inp["weight"], inp["bias"])}


def check(case: Case, got: Any, want: Any) -> None:
    p = case.params
    world = p["world"]
    ranks = ranks_ok(got, world)
    if p["kind"] == "refuse":
        _check_refuse(p, ranks)
        return
    if p["layer"] == "column":
        _check_column(p, ranks, want)
    else:
        _check_row(p, ranks, want)


def _check_refuse(p: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
    dim, size = ("out_features", p["out"]) if p["layer"] == "column" else ("in_features", p["in"])
    cls = "ColumnParallelLinear" if p["layer"] == "column" else "RowParallelLinear"
    for r in ranks:
        raised = r["value"]["raised"]
        if raised is None:
            raise Fail(f"{cls} with {dim} = {size} at world size {p['world']} was accepted: "
                       f"{size} does not divide by {p['world']}, so the shards cannot be equal "
                       f"— raise ValueError naming both sizes")
        if raised[0] != "ValueError":
            raise Fail(f"{cls} with {dim} = {size} at world size {p['world']} raised "
                       f"{raised[0]} ({raised[1]}); expected ValueError")
        if str(size) not in raised[1] or str(p["world"]) not in raised[1]:
            raise Fail(f"the ValueError says {raised[1]!r}: a clear refusal names the size "
                       f"({size}) and the world size ({p['world']})")


def _check_column(p: dict[str, Any], ranks: list[dict[str, Any]], want: dict[str, Any]) -> None:
    world, n = p["world"], p["out"] // p["world"]
    for r in ranks:
        rank, v = r["rank"], r["value"]
        lo, hi = rank * n, (rank + 1) * n
        close(v["weight"], want["weight"][lo:hi], f"rank {rank}'s weight shard",
              f"a column-parallel shard is rows [{lo}, {hi}) of W [out, in] (contiguous "
              f"blocks of out/W rows, rank 0 first)")
        if want["bias"] is None:
            if v["bias"] is not None:
                raise Fail(f"rank {rank} kept a bias, but the layer has none")
        else:
            close(v["bias"], want["bias"][lo:hi], f"rank {rank}'s bias shard",
                  f"each rank keeps the bias of its own output rows [{lo}, {hi})")
        if p["flag"]:
            close(v["out"], want["full"], f"rank {rank}'s output (gather_output=True)",
                  "gather every rank's [rows, out/W] slice along the last dimension, rank "
                  "order")
        else:
            close(v["out"], want["full"][:, lo:hi], f"rank {rank}'s output "
                  f"(gather_output=False)", "without gather_output each rank returns only "
                  "its own slice [rows, out/W]")
    if p["flag"]:
        expect_collectives(ranks, world, {"all_gather": 1}, "column-parallel with gather",
                           "the output slices are disjoint: one all-gather joins them "
                           "(an all-reduce of zero-padded slices moves W times the bytes)")
    else:
        expect_collectives(ranks, world, {}, "column-parallel without gather",
                           "each rank's slice is complete on its own: no communication")


def _check_row(p: dict[str, Any], ranks: list[dict[str, Any]], want: dict[str, Any]) -> None:
    import torch.nn.functional as F

    world, n = p["world"], p["in"] // p["world"]
    full, bias = want["full"], want["bias"]
    for r in ranks:
        rank, v = r["rank"], r["value"]
        lo, hi = rank * n, (rank + 1) * n
        close(v["weight"], want["weight"][:, lo:hi], f"rank {rank}'s weight shard",
              f"a row-parallel shard is columns [{lo}, {hi}) of W [out, in]")
        hint = ""
        out = v["out"]
        if hasattr(out, "shape") and tuple(out.shape) == tuple(full.shape):
            partial = F.linear(want["x"][:, lo:hi], want["weight"][:, lo:hi])
            if bias is not None and world > 1 and _near(out, full + (world - 1) * bias):
                hint = ("the bias was added on every rank before the all-reduce, so the sum "
                        f"holds it {world} times: add it once, after the all-reduce")
            elif world > 1 and (_near(out, partial) or (bias is not None
                                                        and _near(out, partial + bias))):
                hint = ("this is the rank's partial sum: the partial products x_r W_r^T must "
                        "be summed across ranks with an all-reduce")
        close(out, full, f"rank {rank}'s output", hint or "every rank ends with the full "
              "[rows, out] output: sum the partial products, then add the bias once")
    expect_collectives(ranks, world, {"all_reduce": 1}, "row-parallel",
                       "the partial products are summed by exactly one all-reduce")


def _near(a: Any, b: Any) -> bool:
    import torch

    return bool(torch.allclose(a, b, rtol=1e-4, atol=1e-4))
