"""Child side of `tensor-parallel`: run the learner's layers on W ranks, return raw results.

Every case but `plan` runs in `world` separate processes joined by torch.distributed
(runtime.run_ranks: forked on the CPU, gloo over the sandbox's own loopback; spawned on CUDA).
Each rank builds the same seeded full weights and input (runtime.*_inputs), constructs the
learner's layer with the process group handed in, and sends back what the layer kept (its weight
shards), what `forward` returned, and every collective it called (name, on the handed-in group,
payload bytes) with its pid. Kinds (`case.params["kind"]`):
- "linear": ColumnParallelLinear / RowParallelLinear on a divisible split;
- "refuse": the same constructor on a split that does not divide (what it raised, if anything);
- "mlp": ParallelMLP; "attention": ParallelAttention over a causal sequence; "plan": head_plan
  for a list of (heads, kv_heads, world, rank), in this process (no collective);
- "decode": TPDecoder on the shipped target: prefill, greedy steps, the collective-log length
  after each step (to split bytes per token), and the KV cache it holds.

Every call's inputs (full weights, x, positions, the prompt's list) are compared after it with
a private copy made before it (lab.exercises.untouched): `touched` lists [call, changed inputs].
No case here is timed, so the comparison costs nothing a gate measures.

No verdict is computed here: the grader (grading/) judges these results.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from lab.exercises.tensor_parallel import runtime
from lab.grader.api import Case, RunContext

CHILD_MODULES = ("lab.exercises.tensor_parallel.runtime", "lab.exercises.untouched")

Data = Any


def _need(solution: ModuleType, name: str) -> Any:
    value = getattr(solution, name, None)
    if value is None:
        raise AttributeError(f"your module does not define {name}")
    return value


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Data:
    p = dict(case.params)
    kind = p["kind"]
    if kind == "plan":
        return _plans(solution, p)
    fn = {"linear": _linear, "refuse": _refuse, "mlp": _mlp, "attention": _attention,
          "decode": _decode}[kind]
    if kind == "decode":
        p["checkpoint"] = (ctx.model_paths or {}).get("target") or str(runtime.SHIPPED_TARGET)
    ranks = runtime.run_ranks(solution, int(p["world"]), _Bound(fn, p, ctx.device),
                              device=ctx.device, deadline_s=float(p.get("deadline_s", 8.0)))
    for r in ranks:  # a stub: fail as not implemented (the grader then skips the level's rest)
        if r.get("error") and r["error"][0] == "NotImplementedError":
            where = f" (rank {r['rank']}, {r['error'][2]})" if r["error"][2] else ""
            raise NotImplementedError(f"{r['error'][1]}{where}")
    return {"ranks": ranks}


class _Bound:
    """fn with the case's params and device (a plain callable: spawned ranks pickle it)."""

    def __init__(self, fn: Any, p: dict[str, Any], device: str) -> None:
        self.fn, self.p, self.device = fn, p, device

    def __call__(self, solution: Any, rank: int, world: int, group: Any) -> Any:
        return self.fn(solution, rank, world, group, self.p, self.device)


def _to(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: (v.to(device) if v is not None and hasattr(v, "to") else v)
            for k, v in inputs.items()}


def _tensor(value: Any, what: str) -> Any:
    import torch

    if not isinstance(value, torch.Tensor):
        return {"unexpected": f"{what} is {type(value).__name__}, not a torch.Tensor"}
    return value.detach().float().cpu().contiguous()


class _Watch:
    """The caller's inputs of each call, checked untouched after it (a private copy each)."""

    def __init__(self) -> None:
        self.touched: list[list[Any]] = []

    def call(self, what: str, fn: Any, args: dict[str, Any], *rest: Any, **kw: Any) -> Any:
        from lab.exercises.untouched import changed, keep

        kept = keep(args)
        out = fn(*args.values(), *rest, **kw)
        paths = changed(args, kept)
        if paths:
            self.touched.append([what, paths])
        return out


def _kept(layer: Any, name: str) -> Any:
    value = getattr(layer, name, "missing")
    if isinstance(value, str):
        return {"unexpected": f"the layer has no attribute {name!r}"}
    return None if value is None else _tensor(value, f"layer.{name}")


def _linear(solution: Any, rank: int, world: int, group: Any, p: dict[str, Any],
            device: str) -> Data:
    inp = _to(runtime.linear_inputs(p), device)
    x = inp["x"]
    watch = _Watch()
    full = {"weight": inp["weight"], "bias": inp["bias"]}
    if p["layer"] == "column":
        cls = "ColumnParallelLinear"
        layer = watch.call(cls, _need(solution, cls), full, group, gather_output=p["flag"])
    else:
        cls = "RowParallelLinear"
        layer = watch.call(cls, _need(solution, cls), full, group, input_is_parallel=p["flag"])
        if p["flag"]:  # the drive hands each rank its slice of the input
            n = p["in"] // world
            x = x[:, rank * n:(rank + 1) * n].contiguous()
    out = watch.call(f"{cls}.forward", layer.forward, {"x": x})
    return {"weight": _kept(layer, "weight"), "bias": _kept(layer, "bias"),
            "out": _tensor(out, "forward(x)"), "touched": watch.touched}


def _refuse(solution: Any, rank: int, world: int, group: Any, p: dict[str, Any],
            device: str) -> Data:
    inp = runtime.linear_inputs(p)
    cls = _need(solution, "ColumnParallelLinear" if p["layer"] == "column"
                else "RowParallelLinear")
    try:
        cls(inp["weight"], inp["bias"], group, p["flag"])
    except NotImplementedError:
        raise
    except Exception as exc:  # what it raised is the answer
        return {"raised": [type(exc).__name__, str(exc)[:300]]}
    return {"raised": None}


def _mlp(solution: Any, rank: int, world: int, group: Any, p: dict[str, Any],
         device: str) -> Data:
    inp = _to(runtime.mlp_inputs(p), device)
    watch = _Watch()
    mlp = watch.call("ParallelMLP", _need(solution, "ParallelMLP"),
                     {"gate_weight": inp["gate"], "up_weight": inp["up"],
                      "down_weight": inp["down"]}, group)
    out = watch.call("ParallelMLP.forward", mlp.forward, {"x": inp["x"]})
    return {"out": _tensor(out, "forward(x)"), "touched": watch.touched}


def _attention(solution: Any, rank: int, world: int, group: Any, p: dict[str, Any],
               device: str) -> Data:
    inp = _to(runtime.attention_inputs(p), device)
    watch = _Watch()
    attn = watch.call("ParallelAttention", _need(solution, "ParallelAttention"),
                      {"q_weight": inp["q"], "k_weight": inp["k"], "v_weight": inp["v"],
                       "o_weight": inp["o"]}, p["heads"], p["kv_heads"], group,
                      rope_theta=10000.0)
    out = watch.call("ParallelAttention.forward", attn.forward,
                     {"x": inp["x"], "positions": inp["positions"]})
    return {"out": _tensor(out, "forward(x, positions)"), "touched": watch.touched}


def _plans(solution: ModuleType, p: dict[str, Any]) -> Data:
    head_plan = _need(solution, "head_plan")
    out: list[Data] = []
    for heads, kv, world, rank in p["calls"]:
        try:
            plan = head_plan(heads, kv, world, rank)
        except NotImplementedError:
            raise
        except Exception as exc:  # a refusal is an answer
            out.append({"raised": [type(exc).__name__, str(exc)[:300]]})
            continue
        if not isinstance(plan, dict):
            out.append({"unexpected": f"head_plan returned {type(plan).__name__}, not a dict"})
            continue
        out.append({"q_heads": [int(h) for h in plan.get("q_heads", [])],
                    "kv_heads": [int(h) for h in plan.get("kv_heads", [])],
                    "replicated": bool(plan.get("replicated")),
                    "note": str(plan.get("note", ""))[:300]})
    return out


def _decode(solution: Any, rank: int, world: int, group: Any, p: dict[str, Any],
            device: str) -> Data:
    log = runtime.CURRENT["log"]
    dec = _need(solution, "TPDecoder")(p["checkpoint"], group)
    marks = [len(log.calls)]
    watch = _Watch()
    token = int(watch.call("TPDecoder.prefill", dec.prefill,
                           {"tokens": [int(t) for t in p["prompt"]]}))
    tokens = [token]
    marks.append(len(log.calls))
    for _ in range(int(p["max_new"]) - 1):
        token = int(dec.step(token))
        tokens.append(token)
        marks.append(len(log.calls))
    cache = list(dec.kv_cache())
    layers = sorted({0, len(cache) - 1}) if cache else []
    return {"tokens": tokens, "marks": marks, "cache_layers": len(cache),
            "touched": watch.touched,
            "kv": {str(i): [_tensor(cache[i][0], f"kv_cache()[{i}][0]"),
                            _tensor(cache[i][1], f"kv_cache()[{i}][1]")] for i in layers}}
