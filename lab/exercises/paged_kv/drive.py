"""Child side of `paged-kv`: call the learner's code on a case's plain inputs, return raw results.

Three kinds of case (`case.params["kind"]`):
- "trace": replay a list of BlockManager operations; per operation, what it returned (or the name
  and message of what it raised), `num_free()` after it, and the block table of every sequence
  the trace names (None where `block_table` raised). With `record = "free"` (long workloads) only
  the returns and free counts.
- "gather" / "write": the learner's `paged_attention` / `write_kv` on seeded tensors
  (runtime.gather_inputs); the output tensor (or the written pool) comes back as is.
- "decode": the shipped target stepped over a paged pool (runtime.PagedDecoder) with the learner's
  BlockManager, `write_kv` and `paged_attention`: sequences arrive, prefill one token per step,
  decode greedily, fork (the child takes the parent's second-best token), finish and are freed;
  every sequence's tokens, the top-1/top-2 logit margins and `num_free()` per step come back.

No verdict is computed here: the grader (grading/) judges these results.
"""

from __future__ import annotations

from numbers import Integral
from types import ModuleType
from typing import Any

from lab.exercises.paged_kv import runtime
from lab.grader.api import Case, RunContext

CHILD_MODULES = ("lab.exercises.paged_kv.runtime",)

Data = Any


def _plain(value: Any) -> Data:
    """The learner's return value as plain data (ints, lists, None); anything else is described."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return {"unexpected": f"{type(value).__name__} {value!r}"[:200]}


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Data:
    kind = case.params["kind"]
    if kind == "trace":
        return _trace(solution, case.params)
    if kind == "gather":
        return _gather(solution, case.params, ctx)
    if kind == "write":
        return _write(solution, case.params, ctx)
    if kind == "decode":
        return _decode(solution, case.params, ctx)
    raise ValueError(f"unknown case kind {kind!r}")


def _manager(solution: ModuleType, p: dict[str, Any]) -> Any:
    cls = getattr(solution, "BlockManager", None)
    if cls is None:
        raise AttributeError("your module does not define a class BlockManager")
    if p.get("caching"):
        return cls(p["num_blocks"], p["block_size"], enable_prefix_caching=True)
    return cls(p["num_blocks"], p["block_size"])


_METHODS = {"allocate": "allocate", "append": "append_slot", "fork": "fork", "free": "free",
            "can_allocate": "can_allocate"}


def _trace(solution: ModuleType, p: dict[str, Any]) -> Data:
    bm = _manager(solution, p)
    full = p.get("record", "full") == "full"
    results: list[Data] = []
    raised: list[Data] = []
    free: list[Data] = []
    tables: list[Data] = []
    for op in p["ops"]:
        name, args = op[0], op[1:]
        try:
            results.append(_plain(getattr(bm, _METHODS[name])(*args)))
            raised.append(None)
        except NotImplementedError:
            raise
        except Exception as exc:  # the learner's exception is a result the grader judges
            results.append(None)
            raised.append([type(exc).__name__, str(exc)[:200]])
        free.append(_plain(bm.num_free()))
        if full:
            row: list[Data] = []
            for seq in p["seqs"]:
                try:
                    row.append(_plain(bm.block_table(seq)))
                except NotImplementedError:
                    raise
                except Exception:
                    row.append(None)
            tables.append(row)
    return {"results": results, "raised": raised, "free": free, "tables": tables}


def _gather(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Data:
    inputs = runtime.gather_inputs(p, ctx.device)
    out = solution.paged_attention(inputs["q"], inputs["k_cache"], inputs["v_cache"],
                                   inputs["block_tables"], inputs["context_lens"],
                                   inputs["scale"])
    return _tensor(out, "paged_attention")


def _write(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Data:
    import torch

    inputs = runtime.gather_inputs(p, ctx.device)
    k_cache = torch.zeros_like(inputs["k_cache"])
    v_cache = torch.zeros_like(inputs["v_cache"])
    g = torch.Generator().manual_seed(int(p["seed"]) + 1)
    n = len(p["slots"])
    k = torch.randn((n, p["kv_heads"], p["head_dim"]), generator=g).to(ctx.device)
    v = torch.randn((n, p["kv_heads"], p["head_dim"]), generator=g).to(ctx.device)
    blocks = torch.tensor([s[0] for s in p["slots"]], dtype=torch.long, device=ctx.device)
    offsets = torch.tensor([s[1] for s in p["slots"]], dtype=torch.long, device=ctx.device)
    solution.write_kv(k_cache, v_cache, blocks, offsets, k, v)
    return {"k_cache": k_cache.detach().cpu(), "v_cache": v_cache.detach().cpu(),
            "k": k.cpu(), "v": v.cpu()}


def _tensor(out: Any, fn: str) -> Data:
    import torch

    if not isinstance(out, torch.Tensor):
        return {"unexpected": f"{fn} returned {type(out).__name__}, not a torch.Tensor"}
    return out.detach().float().cpu().contiguous()


def _decode(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Data:
    model = runtime.load_model(ctx.device, (ctx.model_paths or {}).get("target"))
    bs = p["block_size"]
    dec = runtime.PagedDecoder(model, p["num_blocks"], bs)
    bm = _manager(solution, p)
    pending = sorted(p["seqs"], key=lambda s: (s["start"], s["id"]))
    forks = sorted(p.get("forks", []), key=lambda f: (f["step"], f["child"]))
    live: dict[int, dict[str, Any]] = {}
    outputs: dict[str, list[int]] = {}
    margins: dict[str, list[float]] = {}
    free: list[int] = []
    copies: list[list[int]] = []
    step = 0
    while pending or forks or live:
        while pending and pending[0]["start"] <= step:
            s = pending.pop(0)
            bm.allocate(s["id"], list(s["prompt"]))
            live[s["id"]] = {"prompt": list(s["prompt"]), "out": [], "fed": 0,
                             "max_new": s["max_new"], "second": None}
        while forks and forks[0]["step"] <= step:
            f = forks.pop(0)
            parent = live[f["parent"]]
            bm.fork(f["parent"], f["child"])
            live[f["child"]] = {"prompt": parent["prompt"],
                                "out": parent["out"][:-1] + [parent["second"]],
                                "fed": parent["fed"], "max_new": f["max_new"], "second": None}
            margins[str(f["child"])] = margins.get(str(f["parent"]), [])[:-1] + [None]
        if not live:
            step += 1
            continue
        order = sorted(live)
        tokens, positions, slots = [], [], []
        for sid in order:
            s = live[sid]
            pos = s["fed"]
            if pos < len(s["prompt"]):
                token = s["prompt"][pos]
                table = bm.block_table(sid)
                slots.append((int(table[pos // bs]), pos % bs))
            else:
                token = s["out"][-1]
                block, offset, cow = bm.append_slot(sid, token)
                if cow is not None:
                    dec.copy_block(int(cow[0]), int(cow[1]))
                    copies.append([int(cow[0]), int(cow[1])])
                slots.append((int(block), int(offset)))
            tokens.append(int(token))
            positions.append(pos)
        tables = [[int(b) for b in bm.block_table(sid)] for sid in order]
        logits = dec.step(tokens, positions, slots, tables, solution.write_kv,
                          solution.paged_attention)
        top = logits.topk(2, dim=-1)
        values, indices = top.values.cpu().tolist(), top.indices.cpu().tolist()
        for i, sid in enumerate(order):
            s = live[sid]
            s["fed"] += 1
            if s["fed"] < len(s["prompt"]):
                continue
            s["out"].append(indices[i][0])
            s["second"] = indices[i][1]
            margins.setdefault(str(sid), []).append(values[i][0] - values[i][1])
            if len(s["out"]) >= s["max_new"]:
                outputs[str(sid)] = s["out"]
                del live[sid]
                bm.free(sid)
        free.append(int(bm.num_free()))
        step += 1
    return {"outputs": outputs, "margins": margins, "free": free, "copies": copies}
