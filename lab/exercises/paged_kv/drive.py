"""Child side of `paged-kv`: call the learner's code on a case's plain inputs, return raw results.

Three kinds of case (`case.params["kind"]`):
- "trace": replay a list of BlockManager operations; per operation, what it returned (or the name
  and message of what it raised), `num_free()` after it, and the block table of every sequence
  the trace names (None where `block_table` raised). With `record = "free"` (long workloads) only
  the returns and free counts.
- "gather" / "write": the learner's `paged_attention` / `write_kv` on seeded tensors
  (runtime.gather_inputs); the output tensor (or the written pool) comes back as is.
- "decode": the shipped target over a paged pool (runtime.PagedDecoder) with the learner's
  BlockManager, `write_kv` and `paged_attention`: a sequence arrives (allocate; its prompt's K/V
  written to its slots; first token from the prefill), decodes greedily one token per step
  (append_slot, copy-on-write copies done in the pool, the gather over its table), may fork (the
  child takes the parent's second-best token), finishes and is freed; every sequence's tokens,
  the top-1/top-2 logit margins, the copies and `num_free()` per step come back.

The caller's inputs are read-only: every call of the learner's code is compared, after it,
with a private copy of what it was handed (`lab.exercises.untouched`): the token lists of
`allocate` / `can_allocate`, and every tensor of `paged_attention` and of `write_kv` but the two
caches `write_kv` writes. What changed comes back as `touched` ([function, path] pairs, only
when there is any). The timed gather case is not compared (the copy and the comparison would
be timed with the gather); its untimed cases call the same function.

No verdict is computed here: the grader (grading/) judges these results.
"""

from __future__ import annotations

from numbers import Integral
from types import ModuleType
from typing import Any

from lab.exercises.paged_kv import runtime
from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

CHILD_MODULES = ("lab.exercises.paged_kv.runtime", "lab.exercises.untouched")
MAX_TOUCHED = 8

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


def warm(device: str) -> None:
    """Load the shipped target ahead of a level-4 grading (a prepared child, and the grader)."""
    runtime.load_model(device)


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Data:
    kind = case.params["kind"]
    if kind == "trace":
        return _trace(solution, case.params)
    if kind == "gather":
        # a timed case's calls each ask a new question (ctx.seed: runtime.gather_inputs), so
        # none can be replayed
        params = {**case.params, "call": ctx.seed} if case.timed else case.params
        return _gather(solution, params, ctx)
    if kind == "write":
        return _write(solution, case.params, ctx)
    if kind == "decode":
        return _decode(solution, case.params, ctx)
    raise ValueError(f"unknown case kind {kind!r}")


def _guarded(fn: Any, name: str, params: tuple[str, ...], reads: tuple[str, ...],
             touched: list[list[str]]) -> Any:
    """`fn`, with the arguments named in `reads` compared with a private copy after each call;
    what changed is added to `touched` as [name, path]."""
    def call(*args: Any) -> Any:
        watched = {k: v for k, v in zip(params, args, strict=False) if k in reads}
        kept = keep(watched)
        out = fn(*args)
        for path in changed(watched, kept):
            if [name, path] not in touched and len(touched) < MAX_TOUCHED:
                touched.append([name, path])
        return out
    return call


_WRITE = ("k_cache", "v_cache", "blocks", "offsets", "k", "v")
_ATTEND = ("q", "k_cache", "v_cache", "block_tables", "context_lens", "scale")


def _with_touched(out: Any, touched: list[list[str]]) -> Any:
    """The result, or (when the call changed its inputs) the inputs it changed: that fails the
    case whatever the result."""
    if not touched:
        return out
    if isinstance(out, dict):
        return {**out, "touched": touched}
    return {"touched": touched}


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
    touched: list[list[str]] = []
    handed: list[tuple[str, dict[str, Any], dict[str, Any]]] = []  # every token list, kept
    for n, op in enumerate(p["ops"]):
        name, args = op[0], list(op[1:])
        tokens = ({f"token_ids (operation {n})": args[-1]}
                  if name in ("allocate", "can_allocate") else {})
        kept = keep(tokens)
        if tokens:
            handed.append((_METHODS[name], tokens, kept))
        try:
            results.append(_plain(getattr(bm, _METHODS[name])(*args)))
            raised.append(None)
        except NotImplementedError:
            raise
        except Exception as exc:  # the learner's exception is a result the grader judges
            results.append(None)
            raised.append([type(exc).__name__, str(exc)[:200]])
        for path in changed(tokens, kept):
            if len(touched) < MAX_TOUCHED:
                touched.append([_METHODS[name], path])
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
    for method, tokens, kept in handed:  # a list kept by the manager and changed later
        for path in changed(tokens, kept):
            if [method, path] not in touched and len(touched) < MAX_TOUCHED:
                touched.append([method, f"{path}, after the call (the list was kept, not "
                                        "copied, and changed by a later call)"])
    return _with_touched({"results": results, "raised": raised, "free": free, "tables": tables},
                         touched)


def _gather(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Data:
    inputs = runtime.gather_inputs(p, ctx.device)
    touched: list[list[str]] = []
    attend = solution.paged_attention
    if "call" not in p:  # untimed (a timed call's copy and comparison would be timed with it)
        attend = _guarded(attend, "paged_attention", _ATTEND, _ATTEND, touched)
    out = attend(*(inputs[k] for k in _ATTEND))
    return _with_touched(_tensor(out, "paged_attention"), touched)


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
    touched: list[list[str]] = []
    _guarded(solution.write_kv, "write_kv", _WRITE, _WRITE[2:], touched)(
        k_cache, v_cache, blocks, offsets, k, v)
    return _with_touched({"k_cache": k_cache.detach().cpu(), "v_cache": v_cache.detach().cpu(),
                          "k": k.cpu(), "v": v.cpu()}, touched)


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
    touched: list[list[str]] = []
    write_kv = _guarded(solution.write_kv, "write_kv", _WRITE, _WRITE[2:], touched)
    attend = _guarded(solution.paged_attention, "paged_attention", _ATTEND, _ATTEND, touched)
    allocate = _guarded(bm.allocate, "allocate", ("seq_id", "token_ids"), ("token_ids",),
                        touched)
    pending = sorted(p["seqs"], key=lambda s: (s["start"], s["id"]))
    forks = sorted(p.get("forks", []), key=lambda f: (f["step"], f["child"]))
    live: dict[int, dict[str, Any]] = {}
    outputs: dict[str, list[int]] = {}
    margins: dict[str, list[float | None]] = {}
    free: list[int] = []
    copies: list[list[int]] = []
    step = 0
    while pending or forks or live:
        while pending and pending[0]["start"] <= step:  # arrive: allocate, prefill, 1st token
            s = pending.pop(0)
            sid, prompt = s["id"], [int(t) for t in s["prompt"]]
            allocate(sid, prompt)
            table = [int(b) for b in bm.block_table(sid)]
            slots = [(table[pos // bs], pos % bs) for pos in range(len(prompt))]
            logits = dec.prefill(prompt, slots, write_kv)
            live[sid] = {"plen": len(prompt), "out": [], "max_new": s["max_new"],
                         "second": None}
            _emit(live, sid, logits, margins)
            _done(live, sid, outputs, bm)
        while forks and forks[0]["step"] <= step:  # the child takes the parent's 2nd choice
            f = forks.pop(0)
            parent = live[f["parent"]]
            bm.fork(f["parent"], f["child"])
            live[f["child"]] = {"plen": parent["plen"],
                                "out": [*parent["out"][:-1], parent["second"]],
                                "max_new": f["max_new"], "second": None}
            margins[str(f["child"])] = [*margins[str(f["parent"])][:-1], None]
        if live:
            order = sorted(live)
            tokens, positions, slots = [], [], []
            for sid in order:
                token = live[sid]["out"][-1]
                block, offset, cow = bm.append_slot(sid, token)
                if cow is not None:
                    dec.copy_block(int(cow[0]), int(cow[1]))
                    copies.append([int(cow[0]), int(cow[1])])
                slots.append((int(block), int(offset)))
                tokens.append(int(token))
                positions.append(live[sid]["plen"] + len(live[sid]["out"]) - 1)
            tables = [[int(b) for b in bm.block_table(sid)] for sid in order]
            logits = dec.step(tokens, positions, slots, tables, write_kv, attend)
            for i, sid in enumerate(order):
                _emit(live, sid, logits[i], margins)
                _done(live, sid, outputs, bm)
        free.append(int(bm.num_free()))
        step += 1
    return _with_touched({"outputs": outputs, "margins": margins, "free": free,
                          "copies": copies}, touched)


def _emit(live: dict[int, dict[str, Any]], sid: int, logits: Any,
          margins: dict[str, list[float | None]]) -> None:
    top = logits.topk(2)
    values, indices = top.values.cpu().tolist(), top.indices.cpu().tolist()
    live[sid]["out"].append(int(indices[0]))
    live[sid]["second"] = int(indices[1])
    margins.setdefault(str(sid), []).append(values[0] - values[1])


def _done(live: dict[int, dict[str, Any]], sid: int, outputs: dict[str, list[int]],
          bm: Any) -> bool:
    if len(live[sid]["out"]) < live[sid]["max_new"]:
        return False
    outputs[str(sid)] = live.pop(sid)["out"]
    bm.free(sid)
    return True
