"""spec-verify, child side: call the learner's functions on a case's inputs, return raw outputs.

Runs in the learner's sandbox. It returns only what the learner's code returned or did (blocks,
rows, token lists, the passes each model ran, the global RNG state around a call, which inputs a
call changed in place: `touched`, against a private copy, `lab.exercises.untouched`) - never counts,
statistics or verdicts: `grading/` rebuilds the inputs in the parent and judges there.
Every call gets fresh model wrappers (empty caches, a new pass ledger), so the stub's promise
"both arrive with empty caches" holds on every call.
"""

from __future__ import annotations

import itertools
import random
from functools import lru_cache
from types import ModuleType
from typing import Any

import torch

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.lm import CausalLM, Ledger, vocab_of
from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

# the learner's inputs and model wrapper (over lab.models.lean_llama), and the shipped pair's
# loader (lab.models imports its own submodule lab.models.loading)
CHILD_MODULES = ("lab.exercises.spec_verify.inputs", "lab.exercises.spec_verify.lm", "lab.models",
                 "lab.models.lean_llama", "lab.models.loading", "lab.models.windows",
                 "lab.exercises.untouched")

REPRO_BLOCKS = 200  # calls per reproducibility probe (levels 2)
REPRO_ROWS = 50  # rows per table in the level-3 probe


def warm(device: str) -> None:
    """Load the shipped pair ahead of a grading (its transformers imports take seconds)."""
    inputs.shipped(device)


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    """Execute one case for `solution`; plain data only."""
    if ctx.device == "cpu":
        torch.set_num_threads(1)
    p = case.params
    if case.level == 1:
        if ctx.given is not None:  # built by the grader (grading.inputs): no model loaded here
            drafts, logits = list(ctx.given["drafts"]), ctx.given["logits"]
        else:
            drafts, logits = inputs.l1_inputs(p, ctx.device, ctx.model_paths)
        args = {"drafts": list(drafts), "logits": logits}
        kept = keep(args)
        out = plain(solution.verify_greedy(*args.values()))
        return {"out": out, "touched": changed(args, kept)}
    if case.level == 2:
        return _level2(solution, p)
    if case.level == 3:
        return _level3(solution, p, ctx.seed)
    if case.level == 4:
        return _level4(solution, p, ctx)
    if case.level == 5:
        return _level5(solution, p, ctx)
    raise ValueError(f"no level {case.level}")


_ATOMS = frozenset({int, float, bool, str, type(None)})


def plain(x: Any) -> Any:
    """Tensors and nested sequences to plain Python lists (anything else is passed as is).
    Exact types first: `isinstance(x, torch.Tensor)` goes through the tensor metaclass's
    instance check (~1.5 us), which on a law case's 10^5 token ids cost more than the verifier."""
    if type(x) in _ATOMS:
        return x
    if isinstance(x, list | tuple):
        return [plain(y) for y in x]
    if isinstance(x, torch.Tensor):
        return x.tolist()
    return x


def fresh(target: Any, draft: Any) -> tuple[CausalLM, CausalLM]:
    """New wrappers around the (stateless) models: empty caches, one ledger the grader owns."""
    ledger = Ledger()
    return (CausalLM(target, name="target", ledger=ledger),
            CausalLM(draft, name="draft", ledger=ledger))


def ledger_rows(lm: CausalLM) -> list[list[Any]]:
    """The pair's ledger as plain rows: [model, cached, context] per pass, [model] per reset."""
    assert lm.ledger is not None
    return [[who] if ps is None else [who, ps.cached, list(ps.context)]
            for who, ps in lm.ledger.entries]


def _probe(fn: Any) -> dict[str, Any]:
    """fn(generator) twice with the same generator seed under different global seeds, with the
    global RNG state before and after the first call (the parent compares them)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1234)
        before = torch.get_rng_state()
        a = fn(torch.Generator().manual_seed(99))
        after = torch.get_rng_state()
        torch.manual_seed(4321)
        b = fn(torch.Generator().manual_seed(99))
    return {"a": a, "b": b, "rng_before": before, "rng_after": after}


# ---------------------------------------------------------------------------------------------


def _level2(solution: ModuleType, p: dict[str, Any]) -> Any:
    tp, tq = inputs.tensors(p)
    kept = keep({"q": tq, "p": tp})
    touched: list[str] = []

    def verify(d: list[int], g: torch.Generator) -> Any:
        args = {"drafts": list(d), "q": tq.clone(), "p": tp.clone()}
        out = plain(solution.verify_sampling(*args.values(), g))
        touched.extend(changed(args, {"drafts": d, **kept}))
        return out

    if p["kind"] == "repro":
        drafts = inputs.draws(tq, REPRO_BLOCKS, 5).tolist()
        return {**_probe(lambda g: [verify(d, g) for d in drafts]),
                "touched": sorted(set(touched))}
    drafts = inputs.draws(tq, int(p["samples"]), int(p["seed"])).tolist()
    g = torch.Generator().manual_seed(int(p["seed"]))
    return {"blocks": [verify(d, g) for d in drafts], "touched": sorted(set(touched))}


def _level3(solution: ModuleType, p: dict[str, Any], call_seed: int) -> Any:
    if p["kind"] == "large":
        shape = int(p["seed"]), int(p["B"]), int(p["k"]), int(p["V"])
        tq, tp = inputs.large_inputs(*shape)
        _large_kept(shape)  # copied before the first learner's call can change them
        # tq, tp are shared by every run in this process (not copied: 10^7 floats of copying
        # would dominate a timed round trip); their private copy is made once too. Each call
        # (its own ctx.seed) drafts afresh and seeds its own generator, so no two timed calls
        # ask the same question: an answer cached from an earlier call is wrong.
        g = torch.Generator().manual_seed(call_seed)
        x = inputs.large_drafts(*shape, g)
        args = {"drafts": x.clone(), "q": tq, "p": tp}
        rows = plain(solution.verify_batch(*args.values(), g))
        return {"rows": rows, "drafts": x.tolist(),
                "touched": _large_touched(shape, args, x)}
    touched: list[str] = []

    def verify(x: torch.Tensor, tq: torch.Tensor, tp: torch.Tensor, g: torch.Generator) -> Any:
        args = {"drafts": x.clone(), "q": tq.clone(), "p": tp.clone()}
        out = plain(solution.verify_batch(*args.values(), g))
        touched.extend(changed(args, {"drafts": x, "q": tq, "p": tp}))
        return out

    if p["kind"] == "repro_batch":
        x, tq, tp, _ = inputs.batch_inputs(p["rows"], REPRO_ROWS, 3)
        return {**_probe(lambda g: verify(x, tq, tp, g)), "touched": sorted(set(touched))}
    g = torch.Generator().manual_seed(int(p["seed"]))
    x, tq, tp, _, b = inputs.batch_calls(p)
    calls = [verify(x[c * b : (c + 1) * b], tq, tp, g) for c in range(x.shape[0] // b)]
    return {"calls": calls, "touched": sorted(set(touched))}


_large_calls = itertools.count()
LARGE_SLICES = 8


def _large_touched(shape: tuple[int, int, int, int], args: dict[str, Any],
                   drafts: torch.Tensor) -> list[str]:
    """Which shared large inputs a call changed. The first call in a process compares all of
    q and p; later ones (the timed calls) compare every 8th row in turn, starting from a row
    that moves by one each call. A change stays in the shared tensors, so it is still found
    within 8 calls; and the timed round trip pays 1/8 of a 10^7-float comparison, not all of
    it (all of it made the reference's round trip 2.5x its verify, and halved the ratio by
    which a Python loop over the vocabulary shows)."""
    n = next(_large_calls)
    part = slice(None) if n == 0 else slice(n % LARGE_SLICES, None, LARGE_SLICES)
    kept = _large_kept(shape)
    return changed({"drafts": args["drafts"], "q": args["q"][part], "p": args["p"][part]},
                   {"drafts": drafts, "q": kept["q"][part], "p": kept["p"][part]})


@lru_cache(maxsize=2)
def _large_kept(shape: tuple[int, int, int, int]) -> dict[str, torch.Tensor]:
    """The private copy of the shared large inputs, made before any learner call sees them."""
    tq, tp = inputs.large_inputs(*shape)
    return {"q": tq.clone(), "p": tp.clone()}


def _level4(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Any:
    kind = p["kind"]
    device = ctx.device if p["model"] == "shipped" else "cpu"
    target, draft, prompt, eos = inputs.models(p, device, ctx.model_paths)
    k, budget = int(p["k"]), int(p["max_new_tokens"])
    temp = float(p.get("temperature", 0.0))

    def call(g: torch.Generator | None, with_ledger: bool = False) -> Any:
        t_lm, d_lm = fresh(target, draft)
        out = plain(solution.speculative_generate(t_lm, d_lm, list(prompt), budget, k,
                                                  temperature=temp, generator=g,
                                                  eos_token_id=eos))
        return {"out": out, "ledger": ledger_rows(t_lm)} if with_ledger else out

    if kind == "timed":  # each call (its own ctx.seed) extends the prompt by 3 drawn tokens:
        # no two timed calls ask the same question, so no answer can be replayed from a cache
        extra = random.Random(ctx.seed)
        vocab = vocab_of(target)
        prompt = [*prompt, *(extra.randrange(vocab) for _ in range(3))]
        return call(None)
    if kind == "greedy":
        return call(None, with_ledger=True)
    if kind == "repro":
        return _probe(call)
    if kind in ("law", "sampled_structure"):
        g = torch.Generator().manual_seed(int(p["seed"]))
        return {"outs": [call(g) for _ in range(int(p["runs"]))]}
    raise ValueError(f"unknown level-4 case kind {kind!r}")


def _level5(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Any:
    if p["kind"] == "mask":
        mask = solution.tree_attention_mask(list(p["parents"]))
        is_tensor = isinstance(mask, torch.Tensor)
        return {"type": type(mask).__name__,
                "mask": mask.detach().cpu().contiguous() if is_tensor else None}
    if p["kind"] == "verify":
        tokens, par, logits = inputs.tree_inputs(p)
        got = solution.verify_tree(list(tokens), list(par), logits.clone())
        return {"result": plain(got)}
    return _tree_generate(solution, p, ctx)


def _tree_generate(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> Any:
    """The grader's tree loop around the learner's mask and verifier (greedy, batch 1).

    The draft proposes `width` children of the root (its top tokens) and extends each greedily to
    `depth` nodes; branch 0 is exactly the chain a k = depth loop would have drafted. Returns,
    per target pass, the tree, the target's argmax per node and what the verifier returned; it
    stops at the first path that is not a root-to-node chain (nothing sensible can follow).
    """
    device = ctx.device if p["model"] == "shipped" else "cpu"
    t_model, d_model, prompt, _ = inputs.models(p, device, ctx.model_paths)
    target, draft = fresh(t_model, d_model)
    budget, width, depth = int(p["max_new_tokens"]), int(p["width"]), int(p["depth"])
    seq = list(prompt)
    out: list[int] = []
    passes: list[dict[str, Any]] = []
    if len(seq) > 1:
        target.forward(seq[:-1])
    while len(out) < budget:
        n = len(seq)
        d = min(depth, budget - len(out) - 1)
        tokens, par = [seq[-1]], [-1]
        if d > 0:
            draft.crop(min(draft.cache_len, n - 1))
            if draft.cache_len < n - 1:
                draft.forward(seq[draft.cache_len : n - 1])
            top = torch.topk(draft.forward([seq[-1]])[-1], width).indices.tolist()
            for b in range(width):
                draft.crop(n)
                node, tok = 0, top[b]
                for step in range(d):
                    tokens.append(tok)
                    par.append(node)
                    node = len(tokens) - 1
                    if step + 1 < d:
                        tok = int(draft.forward([tok])[-1].argmax())
        mask = solution.tree_attention_mask(list(par))
        logits = target.forward_tree(tokens, mask)
        got = plain(solution.verify_tree(list(tokens), list(par), logits.clone()))
        passes.append({"tokens": tokens, "parents": par, "argmax": logits.argmax(-1).tolist(),
                       "result": got})
        path, nxt = got if isinstance(got, list) and len(got) == 2 else ([], None)
        chain = isinstance(path, list) and all(
            isinstance(i, int) and 0 < i < len(par) and par[i] == (path[j - 1] if j else 0)
            for j, i in enumerate(path))
        if not chain or not isinstance(nxt, int):
            break
        emitted = ([tokens[i] for i in path] + [nxt])[: budget - len(out)]
        out += emitted
        seq += emitted
        base = n - 1
        target.keep([*range(base + 1), *(base + i for i in path)])
    return {"passes": passes}
