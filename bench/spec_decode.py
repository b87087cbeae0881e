"""Speculative decoding on the shipped pair: the reference loop vs plain greedy vs transformers.

For each k it prints α̂, τ (tokens per target pass) next to the formula
(1 − α̂^(k+1)) / (1 − α̂), target passes per token, tokens/s and speed-up over plain greedy for:
  plain-lab   the target alone through the lab's CausalLM (one token per pass)
  plain-hf    the target alone through `generate(do_sample=False)`
  assisted-hf transformers' assisted generation (`generate(assistant_model=draft)`, k fixed)
  reference   lab.reference.spec_verify.speculative_generate
Same prompts and max_new_tokens, EOS off, outputs checked identical to plain greedy first;
then interleaved runs (A B C D, A B C D, ...) and medians. On CPU: one torch thread.

Then, from the same run, the cost ratios the analytic speed-up needs — c (one draft step ÷ one
target step) and r (a target pass over k+1 tokens ÷ one token), both through CausalLM, interleaved
— and per k: the analytic bound (1 − α̂^(k+1)) / ((1 − α̂)(k c + 1)) and the fraction of it the
reference reaches, the same bound with the verify pass priced at r instead of 1, the ratio to
assisted generation, and where the reference loop's time goes (draft passes, target verify passes,
prefill, verification, cache crops, other Python) from one instrumented run.

    nice -n 10 python bench/spec_decode.py [--device auto|cpu|cuda] [--dtype float32|bfloat16]
                                          [--tokens 64] [--repeats 5] [--ks 1,2,4,6,8]
                                          [--prompts N] [--methods plain-lab,plain-hf,...]
                                          [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from lab.exercises.spec_verify.grading import SHIPPED_PROMPTS
from lab.exercises.spec_verify.lm import CausalLM, Ledger, plain_greedy
from lab.reference.spec_verify import speculative_generate

_clock: Callable[[], float] = time.perf_counter


class PassCounter:
    """Counts forward passes of one model by every caller: transformers' (a forward hook) and
    the lab's `CausalLM`, whose plain-Llama path bypasses the module call (its ledger)."""

    def __init__(self, model: Any, ledger: Ledger, name: str) -> None:
        self.hooked, self.ledger, self.name = 0, ledger, name
        model.register_forward_hook(self._hook)

    def _hook(self, *_: Any) -> None:
        self.hooked += 1

    @property
    def n(self) -> int:
        return self.hooked + len(self.ledger.passes(self.name))


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ks", default="1,2,4,6,8")
    ap.add_argument("--prompts", type=int, default=len(SHIPPED_PROMPTS))
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: perf_counter (the real figure); cpu: this process's CPU time, "
                    "steadier on a machine other jobs load (one torch thread on CPU only)")
    ap.add_argument("--methods", default="plain-lab,plain-hf,assisted-hf,reference",
                    help="comma list; plain-lab, assisted-hf and reference are always run")
    ap.add_argument("--target", help="a local Hugging Face target folder (default: shipped)")
    ap.add_argument("--draft", help="a local draft folder with the target's tokenizer")
    return ap


def _hf_generate(target_m: Any, draft_m: Any, device: str,
                 n_new: int) -> Callable[[list[int], int | None], list[int]]:
    """Greedy generation through transformers, EOS off; with k, assisted by the draft at a
    fixed k."""
    gen_cfg = copy.deepcopy(target_m.generation_config)
    gen_cfg.eos_token_id = None  # EOS off: every method emits exactly n_new tokens
    gen_cfg.pad_token_id = 1
    gen_cfg.do_sample = False
    gen_cfg.max_new_tokens = n_new
    gen_cfg.min_new_tokens = None

    def hf(prompt: list[int], k: int | None) -> list[int]:
        ids = torch.tensor([prompt], device=device)
        cfg = copy.deepcopy(gen_cfg)
        kwargs: dict[str, Any] = {}
        if k is not None:
            # transformers reads these from the *assistant's* generation config; its defaults
            # (a "heuristic" schedule that shrinks k after each rejection, and a confidence
            # threshold that stops drafting early) would not be the same algorithm at this k
            acfg = draft_m.generation_config
            acfg.num_assistant_tokens = k
            acfg.num_assistant_tokens_schedule = "constant"
            acfg.assistant_confidence_threshold = 0.0
            kwargs["assistant_model"] = draft_m
        with torch.inference_mode():
            out = target_m.generate(ids, generation_config=cfg,
                                    attention_mask=torch.ones_like(ids), **kwargs)
        return [int(t) for t in out[0, len(prompt):].tolist()]

    return hf


@dataclass
class _Bench:
    """The loaded pair, its pass counters, the prompts and the methods compared."""

    target: CausalLM
    draft: CausalLM
    t_count: PassCounter
    d_count: PassCounter
    device: str
    prompts: list[list[int]]
    n_new: int
    methods: dict[str, Callable[[list[int], int], list[int]]]
    want: list[list[int]] = field(default_factory=list)  # plain greedy's output per prompt

    def figures(self, k: int) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
        """Per method at `k`: target passes and draft passes per token, α̂ (the reference),
        and whether every output equals plain greedy's."""
        figures: dict[str, dict[str, float]] = {}
        same: dict[str, str] = {}
        tokens = self.n_new * len(self.prompts)
        for name, fn in self.methods.items():
            n0, d0 = self.t_count.n, self.d_count.n
            acc = judged = 0
            ok = True
            for p, w in zip(self.prompts, self.want, strict=True):
                if name == "reference":
                    self.target.record = True
                out = fn(p, k)
                if name == "reference":
                    got, j = _acceptance(self.target, len(p), p + out)
                    acc, judged = acc + got, judged + j
                    self.target.record = False
                ok = ok and out == w
            figures[name] = {"pass_per_tok": (self.t_count.n - n0) / tokens,
                             "draft_per_tok": (self.d_count.n - d0) / tokens}
            if judged:
                figures[name]["alpha"] = acc / judged
            same[name] = "identical" if ok else "DIFFERS from plain greedy"
        return figures, same

    def timings(self, k: int, repeats: int, cost_ctx: list[int]
                ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        """Interleaved timed rounds of every method at `k` (after a warm-up), with the cost
        ratios sampled between rounds. Returns (seconds per round by method, cost samples)."""
        times: dict[str, list[float]] = {m: [] for m in self.methods}
        for fn in self.methods.values():  # warm-up
            fn(self.prompts[0], k)
        k_costs: dict[str, list[float]] = {}
        for _ in range(repeats):
            for name, fn in self.methods.items():
                _sync(self.device)
                t0 = _clock()
                for p in self.prompts:
                    fn(p, k)
                _sync(self.device)
                times[name].append(_clock() - t0)
            _sample_costs(self.target, self.draft, cost_ctx, [1, k + 1], k_costs, reps=3)
        return times, k_costs


def _load(args: argparse.Namespace, ap: argparse.ArgumentParser) -> tuple[_Bench, str]:
    """The pair loaded, counted and wrapped; the methods kept. Returns it and its dtype."""
    from transformers.utils import logging as hf_logging

    from lab.models import load_pair

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    pair = load_pair(target=args.target, draft=args.draft, device=args.device, dtype=args.dtype)
    device = str(pair.device)
    if device == "cpu":
        torch.set_num_threads(1)
    elif args.clock == "cpu":
        ap.error("--clock cpu measures this process's CPU time: on a GPU it misses the device's")
    target_m, draft_m, tok = pair.target, pair.draft, pair.tokenizer
    ledger = Ledger()
    t_count = PassCounter(target_m, ledger, "target")
    d_count = PassCounter(draft_m, ledger, "draft")
    target = CausalLM(target_m, name="target", ledger=ledger)
    draft = CausalLM(draft_m, name="draft", ledger=ledger)
    prompts = [[int(t) for t in tok.encode(p)] for p in SHIPPED_PROMPTS[: args.prompts]]
    n_new = args.tokens
    hf = _hf_generate(target_m, draft_m, device, n_new)
    methods: dict[str, Callable[[list[int], int], list[int]]] = {
        "plain-lab": lambda p, k: plain_greedy(target, p, n_new),
        "plain-hf": lambda p, k: hf(p, None),
        "assisted-hf": lambda p, k: hf(p, k),
        "reference": lambda p, k: speculative_generate(target, draft, p, n_new, k),
    }
    keep = {"plain-lab", "assisted-hf", "reference", *args.methods.split(",")}
    unknown = keep - set(methods)
    if unknown:
        ap.error(f"unknown method(s) {sorted(unknown)}; choose from {sorted(methods)}")
    methods = {name: fn for name, fn in methods.items() if name in keep}
    bench = _Bench(target, draft, t_count, d_count, device, prompts, n_new, methods)
    return bench, f"{device} ({pair.dtype}), pair {getattr(pair, 'name', 'pycode')}"


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.tokens < 1 or args.prompts < 1:
        ap.error("--repeats, --tokens and --prompts must be >= 1")
    global _clock
    _clock = time.process_time if args.clock == "cpu" else time.perf_counter
    bench, where = _load(args, ap)
    prompts, n_new = bench.prompts, bench.n_new
    ks = [int(k) for k in args.ks.split(",")]
    print(f"# spec_decode on {where}: "
          f"{len(prompts)} prompts x {n_new} new tokens, EOS off, {args.repeats} interleaved "
          f"repeats, medians; torch threads {torch.get_num_threads()}; {args.clock} clock")
    bench.want = [plain_greedy(bench.target, p, n_new) for p in prompts]
    # cost ratios are sampled between the timed rounds below, at a cache length typical of the
    # runs (prompt + half the output), so they see the same load as the timings they explain
    cost_ctx = prompts[0] + bench.want[0][: n_new // 2]
    sizes = sorted({1, *(k + 1 for k in ks)})
    _sample_costs(bench.target, bench.draft, cost_ctx, sizes, {}, reps=2)  # warm-up
    all_costs: dict[str, list[float]] = {}
    print(f"{'k':>2} {'method':<12} {'alpha':>6} {'tau':>6} {'formula':>7} {'pass/tok':>8} "
          f"{'draft/tok':>9} {'tok/s':>8} {'speedup':>7}  output")
    summary: list[str] = []
    phases: list[str] = []
    for k in ks:
        figures, same = bench.figures(k)  # correctness + deterministic figures first
        times, k_costs = bench.timings(k, args.repeats, cost_ctx)  # interleaved, medians
        for key, v in k_costs.items():
            all_costs.setdefault(key, []).extend(v)
        costs = _ratios(k_costs)
        med = {name: statistics.median(times[name]) for name in bench.methods}
        for name in bench.methods:
            print(_method_line(k, name, figures[name], same[name], med, bench))
        summary.append(_summary_line(k, figures["reference"].get("alpha", 0.0), costs, med))
        phases.append(_phase_line(k, _phase_breakdown(bench.target, bench.draft, prompts,
                                                      bench.want, k), costs["t1"]))
    _print_costs(_ratios(all_costs), len(cost_ctx), sizes, summary, phases)
    return 0


def _method_line(k: int, name: str, f: dict[str, float], same: str, med: dict[str, float],
                 bench: _Bench) -> str:
    """One method's row at `k`: α̂, τ, the formula, passes, tokens/s and speed-up."""
    n_prompts, n_new = len(bench.prompts), bench.n_new
    tau = 1.0 / f["pass_per_tok"] if name != "reference" else _tau(f, n_prompts, n_new)
    a = f.get("alpha")
    formula = _expected_tokens(a, k) if a is not None else float("nan")
    return (f"{k:>2} {name:<12} {a if a is not None else float('nan'):>6.3f} {tau:>6.2f} "
            f"{formula:>7.2f} {f['pass_per_tok']:>8.3f} {f['draft_per_tok']:>9.2f} "
            f"{n_prompts * n_new / med[name]:>8.1f} "
            f"{med['plain-lab'] / med[name]:>6.2f}x  {same}")


def _summary_line(k: int, alpha: float, costs: dict[str, float], med: dict[str, float]) -> str:
    """The reference at `k` against its analytic bound (and the bound with r(k+1))."""
    speedup = med["plain-lab"] / med["reference"]
    bound = _expected_tokens(alpha, k) / (k * costs["c"] + 1)
    bound_r = _expected_tokens(alpha, k) / (k * costs["c"] + costs[f"r{k + 1}"])
    return (f"{k:>2} {alpha:>6.3f} {costs['c']:>6.3f} {costs[f'r{k + 1}']:>6.3f} {speedup:>7.2f}x "
            f"{bound:>6.2f}x {speedup / bound:>7.1%} {bound_r:>7.2f}x {speedup / bound_r:>7.1%} "
            f"{med['assisted-hf'] / med['reference']:>8.2f}x")


def _print_costs(pooled: dict[str, float], cache_len: int, sizes: list[int],
                 summary: list[str], phases: list[str]) -> None:
    """The pooled cost ratios, the bound table and the phase table."""
    print(f"\n# costs through CausalLM at cache length {cache_len}, sampled between the timed "
          f"rounds: target step {pooled['t1'] * 1e3:.3f} ms, draft step {pooled['d1'] * 1e3:.3f} "
          f"ms, c = {pooled['c']:.3f}; r(n) = a target pass over n tokens / one token: "
          + ", ".join(f"r({n}) = {pooled[f'r{n}']:.3f}" for n in sizes if n > 1))
    print("# the reference vs its analytic limit (alpha and c from this run; bound_r prices the "
          "verify pass at r(k+1) target steps instead of 1)")
    print(f"{'k':>2} {'alpha':>6} {'c':>6} {'r(k+1)':>6} {'speedup':>8} {'bound':>7} "
          f"{'reached':>7} {'bound_r':>8} {'reached':>7} {'vs-assisted':>9}")
    print("\n".join(summary))
    print("\n# where the reference loop's time goes (one instrumented run, ms per generated token "
          "and share of the loop): draft = draft passes after the prefill, target = verify passes, "
          "prefill = both models over the prompt, verify = verify_greedy, cache = crops; c-loop "
          "and r-loop = one draft pass and one verify pass of the loop / a target step")
    print(f"{'k':>2} {'loop':>7} " + " ".join(f"{p:>15}" for p in _PHASES)
          + f" {'c-loop':>6} {'r-loop':>6}")
    print("\n".join(phases))


_PHASES = ("draft", "target", "prefill", "verify", "cache", "other")


def _expected_tokens(alpha: float, k: int) -> float:
    """(1 − α^(k+1)) / (1 − α): tokens per target pass with i.i.d. acceptance α."""
    return (1 - alpha ** (k + 1)) / (1 - alpha) if alpha < 1 else k + 1.0


def _sample_costs(target: CausalLM, draft: CausalLM, context: list[int], sizes: list[int],
                  into: dict[str, list[float]], reps: int) -> None:
    """Time `reps` rounds of one draft step and target passes over each of `sizes` tokens.

    All through CausalLM on top of `context`, cropped back after each pass, interleaved; seconds
    go to into["d1"] and into[f"t{n}"].
    """
    target.reset()
    draft.reset()
    target.forward(context)
    draft.forward(context)
    base = len(context)
    feed = [int(t) for t in context[-1:]] * max(sizes)
    for _ in range(reps):
        for key, lm, n in [("d1", draft, 1), *((f"t{n}", target, n) for n in sizes)]:
            t0 = _clock()
            lm.forward(feed[:n])
            into.setdefault(key, []).append(_clock() - t0)
            lm.crop(base)


def _ratios(samples: dict[str, list[float]]) -> dict[str, float]:
    """Medians as t1, d1, c = d1 / t1 and r{n} = (pass over n tokens) / t1."""
    med = {key: statistics.median(v) for key, v in samples.items()}
    out = {"t1": med["t1"], "d1": med["d1"], "c": med["d1"] / med["t1"]}
    out.update({key.replace("t", "r", 1): v / med["t1"] for key, v in med.items()
                if key.startswith("t")})
    return out


def _phase_breakdown(target: CausalLM, draft: CausalLM, prompts: list[list[int]],
                     want: list[list[int]], k: int) -> dict[str, float]:
    """Seconds per phase over one run of the reference on every prompt (instrumented copies).

    The models' forward/crop and the module's verify_greedy are wrapped on this run only, so the
    timed runs above pay nothing for it; `other` is the loop's wall time minus the phases.
    """
    import lab.reference.spec_verify as ref

    spent = dict.fromkeys(_PHASES, 0.0)
    calls = dict.fromkeys(_PHASES, 0)

    def timed(fn: Callable[..., Any], phase: Callable[[], str]) -> Callable[..., Any]:
        def wrapper(*a: Any, **kw: Any) -> Any:
            key = phase()
            t0 = _clock()
            try:
                return fn(*a, **kw)
            finally:
                spent[key] += _clock() - t0
                calls[key] += 1
        return wrapper

    def forward_phase(lm: CausalLM, name: str) -> Callable[[], str]:
        return lambda: "prefill" if lm.cache_len == 0 else name

    verify = ref.verify_greedy
    for lm, name in ((target, "target"), (draft, "draft")):
        lm.forward = timed(lm.forward, forward_phase(lm, name))  # type: ignore[method-assign]
        lm.crop = timed(lm.crop, lambda: "cache")  # type: ignore[method-assign]
    ref.verify_greedy = timed(verify, lambda: "verify")
    try:
        t0 = _clock()
        outs = [speculative_generate(target, draft, p, len(w), k)
                for p, w in zip(prompts, want, strict=True)]
        wall = _clock() - t0
    finally:
        ref.verify_greedy = verify
        for lm in (target, draft):
            del lm.forward, lm.crop  # back to the class's methods
    if outs != want:
        raise RuntimeError(f"k = {k}: the instrumented reference differs from plain greedy")
    spent["other"] = wall - sum(spent.values())
    spent["_wall"] = wall
    spent["_draft_pass"] = spent["draft"] / max(calls["draft"], 1)
    spent["_target_pass"] = spent["target"] / max(calls["target"], 1)
    spent["_tokens"] = float(sum(len(w) for w in want))
    return spent


def _phase_line(k: int, spent: dict[str, float], t1: float) -> str:
    """ms per generated token and share per phase, then the loop's own c and r: a draft pass and
    a verify pass over a target step `t1` timed in the same k's rounds."""
    wall, n = spent["_wall"], spent["_tokens"]
    cells = " ".join(f"{spent[p] / n * 1e3:>7.3f} {spent[p] / wall:>6.1%}" for p in _PHASES)
    return (f"{k:>2} {wall / n * 1e3:>7.3f} {cells} {spent['_draft_pass'] / t1:>6.3f} "
            f"{spent['_target_pass'] / t1:>6.3f}")


def _acceptance(target: CausalLM, prompt_len: int, seq: list[int]) -> tuple[int, int]:
    """Accepted drafts and judged positions (accepted + first rejections) from the target trace."""
    acc = judged = 0
    for ps in target.trace:
        if len(ps.context) < prompt_len:
            continue  # prefill
        pos = ps.cached + 1
        for tok in ps.new_tokens[1:]:
            if pos >= len(seq):
                break
            judged += 1
            if tok != seq[pos]:
                break
            acc += 1
            pos += 1
    target.trace.clear()
    return acc, judged


def _tau(f: dict[str, float], n_prompts: int, n_new: int) -> float:
    """Tokens per verify pass for the reference: passes minus one prefill per prompt."""
    passes = f["pass_per_tok"] * n_prompts * n_new
    return n_prompts * n_new / max(passes - n_prompts, 1)


if __name__ == "__main__":
    raise SystemExit(main())
