"""Recompute a pair's figures from the shipped files, and write them to pairs.json + READMEs.

    python -m lab.models.report                 # measure the pycode pair, print JSON
    python -m lab.models.report --write         # ... and record it (pairs.json, READMEs)

Figures (all fp32 on CPU, deterministic except the timings):
- held-out perplexity of target and draft over non-overlapping windows of held-out files;
- alpha: per-token acceptance of greedy speculative decoding = how often the draft's argmax equals
  the target's argmax on the target's own greedy continuations of held-out prompts (exactly the
  acceptance test a greedy verifier applies); also argmax agreement on the held-out text itself;
- c: draft decode step / target decode step (batch 1, KV cache, one torch thread, median of
  interleaved repetitions);
- top-1 minus top-2 logit margins of the target on held-out positions: quantiles and the fractions
  below 1e-4 and 1e-3 (how often greedy grading sits next to a numerical tie).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from lab.models.loading import MODELS_DIR, PAIRS_FILE, available_pairs

WINDOW = 256
# The small sample the slow test recomputes; its figures are recorded under figures["check"].
CHECK_SAMPLE: dict[str, int] = {"windows": 16, "prompts": 8}


def _held_out_ids(model_dir: Path, tokenizer: Any) -> Any:
    """Token stream of the held-out files named in the model folder (the training split)."""
    import torch

    from lab.models.corpus import stdlib_root

    listing = model_dir / "corpus_held_out.txt"
    root = stdlib_root()
    files = [line for line in listing.read_text().splitlines() if line.strip()]
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"held-out files not found under {root} (a different Python?): {missing[:3]}"
        )
    texts = [(root / rel).read_text(encoding="utf-8", errors="replace") for rel in files]
    ids: list[int] = []
    for file_ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(file_ids)
        ids.append(tokenizer.eos_token_id)
    return torch.tensor(ids, dtype=torch.long)


def _windows(ids: Any, n_windows: int | None) -> Any:
    n = (len(ids) - 1) // WINDOW
    if n_windows is not None:
        n = min(n, n_windows)
    import torch

    return torch.stack([ids[i * WINDOW : i * WINDOW + WINDOW + 1] for i in range(n)])


def teacher_forced(pair: Any, windows: Any) -> dict[str, Any]:
    """Perplexities, argmax agreement and target/draft top-1/top-2 margins on held-out text."""
    import torch

    nll = {"target": 0.0, "draft": 0.0}
    agree = 0
    margins: dict[str, list[Any]] = {"target": [], "draft": []}
    count = 0
    with torch.no_grad():
        for i in range(0, len(windows), 8):
            batch = windows[i : i + 8]
            inputs, labels = batch[:, :-1], batch[:, 1:]
            argmax = {}
            for role in ("target", "draft"):
                model = getattr(pair, role)
                logits = model(input_ids=inputs).logits.float()[..., : pair.vocab_size]
                nll[role] += float(
                    torch.nn.functional.cross_entropy(
                        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="sum"
                    )
                )
                top2 = logits.topk(2, dim=-1).values
                margins[role].append((top2[..., 0] - top2[..., 1]).reshape(-1))
                argmax[role] = logits.argmax(-1)
            agree += int((argmax["target"] == argmax["draft"]).sum())
            count += labels.numel()
    out: dict[str, Any] = {
        "held_out_tokens": count,
        "ppl_target": round(float(torch.exp(torch.tensor(nll["target"] / count))), 3),
        "ppl_draft": round(float(torch.exp(torch.tensor(nll["draft"] / count))), 3),
        "argmax_agreement_on_text": round(agree / count, 4),
    }
    for role in ("target", "draft"):
        m = torch.cat(margins[role]).double()
        qs = torch.quantile(m, torch.tensor([0.001, 0.01, 0.05, 0.5], dtype=torch.double))
        out[f"margin_{role}"] = {
            "positions": int(m.numel()),
            "q0.1%": round(float(qs[0]), 6),
            "q1%": round(float(qs[1]), 6),
            "q5%": round(float(qs[2]), 5),
            "median": round(float(qs[3]), 4),
            "min": float(m.min()),
            "frac_below_1e-4": round(float((m < 1e-4).double().mean()), 6),
            "frac_below_1e-3": round(float((m < 1e-3).double().mean()), 6),
        }
    return out


def greedy_alpha(
    pair: Any, ids: Any, *, prompts: int, prompt_len: int, new_tokens: int, seed: int = 0
) -> dict[str, Any]:
    """Acceptance of greedy speculative decoding, measured on the target's greedy outputs."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(ids) - prompt_len - 1, (prompts,), generator=gen).tolist()
    prompt_batch = torch.stack([ids[s : s + prompt_len] for s in starts])
    accepted = total = 0
    ties = 0
    with torch.no_grad():
        full = pair.target.generate(
            input_ids=prompt_batch,
            attention_mask=torch.ones_like(prompt_batch),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=pair.tokenizer.pad_token_id,
        )
        t_logits = pair.target(input_ids=full[:, :-1]).logits.float()[..., : pair.vocab_size]
        d_logits = pair.draft(input_ids=full[:, :-1]).logits.float()[..., : pair.vocab_size]
        gen_slice = slice(prompt_len - 1, full.size(1) - 1)
        t_arg = t_logits[:, gen_slice].argmax(-1)
        d_arg = d_logits[:, gen_slice].argmax(-1)
        if not torch.equal(t_arg, full[:, prompt_len:]):
            # A near-tie between cached and full passes, or a suppressed EOS, can cause this.
            ties = int((t_arg != full[:, prompt_len:]).sum())
        accepted = int((d_arg == full[:, prompt_len:]).sum())
        total = int(full[:, prompt_len:].numel())
        top2 = t_logits[:, gen_slice].topk(2, dim=-1).values
        gen_margin = (top2[..., 0] - top2[..., 1]).reshape(-1).double()
    return {
        "alpha_greedy": round(accepted / total, 4),
        "alpha_positions": total,
        "alpha_setup": f"{prompts} held-out prompts x {prompt_len} tokens, "
        f"{new_tokens} greedy target tokens each",
        "generate_vs_forward_argmax_mismatches": ties,
        "target_margin_on_greedy_output": {
            "frac_below_1e-4": round(float((gen_margin < 1e-4).double().mean()), 6),
            "frac_below_1e-3": round(float((gen_margin < 1e-3).double().mean()), 6),
            "min": float(gen_margin.min()),
        },
    }


def step_cost(pair: Any, ids: Any, *, reps: int = 7, steps: int = 32) -> dict[str, Any]:
    """Per-token decode time of each model at batch 1 on one thread; c = draft / target."""
    import torch
    from transformers import DynamicCache

    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    prompt = ids[:32].unsqueeze(0).to(pair.device)

    def one(model: Any) -> float:
        cache = DynamicCache(config=model.config)
        out = model(input_ids=prompt, cache=cache, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(steps):
            out = model(input_ids=nxt, cache=cache, use_cache=True)
            nxt = out.logits[:, -1:].argmax(-1)
        return (time.perf_counter() - t0) / steps

    times: dict[str, list[float]] = {"target": [], "draft": []}
    try:
        with torch.no_grad():
            one(pair.target)
            one(pair.draft)
            for _ in range(reps):
                for role in ("target", "draft"):
                    times[role].append(one(getattr(pair, role)))
    finally:
        torch.set_num_threads(old_threads)
    t_ms = statistics.median(times["target"]) * 1000
    d_ms = statistics.median(times["draft"]) * 1000
    return {
        "target_step_ms": round(t_ms, 3),
        "draft_step_ms": round(d_ms, 3),
        "c": round(d_ms / t_ms, 3),
        "c_setup": f"batch 1, KV cache, 1 torch thread, median of {reps} interleaved runs "
        f"of {steps} steps, {pair.device}",
    }


def measure(
    name: str = "pycode",
    *,
    windows: int | None = None,
    prompts: int = 32,
    prompt_len: int = 64,
    new_tokens: int = 64,
    timing: bool = True,
) -> dict[str, Any]:
    """All figures for a shipped pair, in fp32 on CPU."""
    import torch

    from lab.models.loading import load_pair

    torch.manual_seed(0)
    pair = load_pair(name, device="cpu", dtype="float32")
    assert pair.target_path is not None
    ids = _held_out_ids(pair.target_path, pair.tokenizer)
    fig: dict[str, Any] = {
        "target_params": sum(p.numel() for p in pair.target.parameters()),
        "draft_params": sum(p.numel() for p in pair.draft.parameters()),
    }
    fig["size_ratio"] = round(fig["target_params"] / fig["draft_params"], 2)
    fig.update(teacher_forced(pair, _windows(ids, windows)))
    fig.update(
        greedy_alpha(pair, ids, prompts=prompts, prompt_len=prompt_len, new_tokens=new_tokens)
    )
    if timing:
        fig.update(step_cost(pair, ids))
    fig["torch"] = torch.__version__
    fig["python"] = platform.python_version()
    return fig


def record(name: str, figures: dict[str, Any]) -> None:
    """Store the figures in pairs.json and regenerate both model READMEs."""
    from lab.models.readme import write_readmes

    data = json.loads(PAIRS_FILE.read_text())
    data[name]["figures"] = figures
    PAIRS_FILE.write_text(json.dumps(data, indent=1) + "\n")
    info = {p.name: p for p in available_pairs()}[name]
    write_readmes(info)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Recompute a shipped pair's figures.")
    parser.add_argument("--pair", default="pycode")
    parser.add_argument("--windows", type=int, default=None, help="held-out windows (all)")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--write", action="store_true", help="record in pairs.json + READMEs")
    args = parser.parse_args(argv)
    figures = measure(args.pair, windows=args.windows, prompts=args.prompts)
    figures["check"] = measure(args.pair, timing=False, **CHECK_SAMPLE)
    figures["check"]["sample"] = dict(CHECK_SAMPLE)
    print(json.dumps(figures, indent=1))
    if args.write:
        record(args.pair, figures)
        print(f"recorded in {PAIRS_FILE.relative_to(MODELS_DIR.parent.parent)}")


if __name__ == "__main__":
    main()
