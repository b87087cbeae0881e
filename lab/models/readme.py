"""Write each shipped model folder's README from its training record and the measured figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from lab.models.loading import PairInfo
from questions.wording import plural

LICENCE = """\
## Provenance and licence

- Training data: the `.py` sources of the standard library of the CPython {python}
  interpreter that ran the training script (`{root}`),
  Copyright (c) 2001-2023 Python Software Foundation, distributed under the PSF License
  Agreement (Python Software Foundation License Version 2). The licence text is copied
  alongside as `LICENSE-PSF.txt`.
- Tokenizer and weights: trained from scratch by this project with `scripts/train_models.py` (no
  pretrained weights involved), released with the project. Nothing is downloaded at run time.
"""


def _loss_table(log: list[dict[str, Any]], rows: int = 14) -> str:
    if not log:
        return "(no log)\n"
    # Rows where the held-out loss was measured, thinned to about `rows`, plus first and last.
    evaluated = [e for e in log if "held_out_loss" in e] or log
    stride = max(1, len(evaluated) // rows)
    picked = [log[0], *evaluated[::stride]]
    if picked[-1] is not log[-1]:
        picked.append(log[-1])
    picked = list({id(e): e for e in picked}.values())
    lines = [
        "| step | tokens seen | minutes (of its phase) | train loss (EMA) "
        "| held-out loss (64 windows) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for e in picked:
        held = e.get("held_out_loss")
        lines.append(
            f"| {e['step']} | {e['tokens']:,} | {e['seconds'] / 60:.1f} | {e['train_loss']:.3f} "
            f"| {'' if held is None else f'{held:.3f}'} |"
        )
    return "\n".join(lines) + "\n"


def _margin_row(name: str, m: dict[str, Any]) -> str:
    return (
        f"| {name} | {m['positions']:,} | {m['frac_below_1e-4']:.2e} | {m['frac_below_1e-3']:.2e} "
        f"| {m['q1%']:.4f} | {m['q5%']:.4f} | {m['median']:.3f} |"
    )


def figures_section(fig: dict[str, Any]) -> str:
    if not fig:
        return "## Measured figures\n\nNot measured yet: `python -m lab.models.report --write`.\n"
    g = fig.get("target_margin_on_greedy_output", {})
    lines = [
        "## Measured figures (fp32, CPU; `python -m lab.models.report` recomputes them)",
        "",
        f"- Parameters: target {fig['target_params']:,}, draft {fig['draft_params']:,} "
        f"(target/draft = {fig['size_ratio']}x).",
        f"- Held-out perplexity over {fig['held_out_tokens']:,} held-out tokens (windows of 256): "
        f"target **{fig['ppl_target']}**, draft **{fig['ppl_draft']}**.",
        f"- Greedy agreement alpha (per-token acceptance of greedy speculative decoding): "
        f"**{fig['alpha_greedy']}** over {fig['alpha_positions']:,} positions "
        f"({fig['alpha_setup']}); argmax agreement on the held-out text itself: "
        f"{fig['argmax_agreement_on_text']}.",
    ]
    if "c" in fig:
        lines.append(
            f"- Cost ratio c = draft step / target step = **{fig['c']}** "
            f"(draft {fig['draft_step_ms']} ms, target {fig['target_step_ms']} ms; "
            f"{fig['c_setup']})."
        )
    lines += [
        "",
        "Top-1 minus top-2 logit margins on held-out positions (teacher-forced):",
        "",
        "| model | positions | frac < 1e-4 | frac < 1e-3 | 1% quantile | 5% quantile | median |",
        "|---|---:|---:|---:|---:|---:|---:|",
        _margin_row("target", fig["margin_target"]),
        _margin_row("draft", fig["margin_draft"]),
        "",
        f"On the target's own greedy outputs: frac < 1e-4 = {g.get('frac_below_1e-4')}, "
        f"frac < 1e-3 = {g.get('frac_below_1e-3')}, smallest margin {g.get('min', 0):.2e}.",
        f"Measured with torch {fig.get('torch')}.",
        "",
    ]
    return "\n".join(lines)


def render(model_dir: Path, role: str, pair: PairInfo) -> str:
    training = json.loads((model_dir / "training.json").read_text())
    log = json.loads((model_dir / "train_log.json").read_text())
    other = pair.draft if role == "target" else pair.target
    shape = training["shape"]
    lines = [
        f"# {model_dir.name}: the {role} of the `{pair.name}` pair",
        "",
        f"A {training['parameters']:,}-parameter Llama-architecture causal LM "
        f"(`LlamaForCausalLM`), the {role} of a speculative-decoding pair with "
        f"[`{other.name}`](../{other.name}/); both share one byte-level BPE tokenizer "
        f"({_vocab(model_dir)} tokens, `tokenizer.json`). Weights are stored in fp16; load them "
        "in fp32 on CPU with `lab.models.load_model` / `load_pair`.",
        "",
        "Trained context: 256 tokens (RoPE; `max_position_embeddings` = 1024). "
        "`<|endoftext|>` separates files (bos = eos); `<|pad|>` pads.",
        "",
        LICENCE.format(
            root=training["corpus_root"],
            python=training.get("python") or pair.figures.get("python", ""),
        ),
        "## Corpus split",
        "",
        f"Rule: {training['corpus_rule']} (seed {training['seed']}, 5% held out).",
        f"{training['train_files']} train files ({training['train_tokens']:,} tokens), "
        f"{training['held_out_files']} held-out files ({training['held_out_tokens']:,} tokens); "
        "the lists are `corpus_train.txt` and `corpus_held_out.txt`, and the sha256 over names + "
        f"contents is train `{training['train_sha256'][:16]}...`, held-out "
        f"`{training['held_out_sha256'][:16]}...` (see `training.json`).",
        "",
        "## Architecture and training",
        "",
        f"- hidden {shape['hidden']}, layers {shape['layers']}, heads {shape['heads']} "
        f"(kv heads {shape['kv_heads']}), MLP {shape['ffn']}, tied input/output embeddings.",
        f"- {training['steps_done']} steps x batch {training['batch_size']} x "
        f"{training['seq_len']} tokens = {training['tokens_seen']:,} tokens seen; "
        f"{training['optimizer']}; peak lr {training['peak_lr']}, {training['schedule']} "
        f"(warm-up {training['warmup_steps']} steps); seed {training['seed']}; "
        f"{training['device']}, {plural(int(training['threads']), 'torch thread')}, "
        f"{training.get('precision', 'fp32')}.",
    ]
    lines += _phases(training)
    lines += [
        f"- Final held-out loss (first 64 held-out windows): {training['held_out_loss']}.",
        "- Reproduce: see the docstring of `scripts/train_models.py` (same commands, same seed).",
        "",
        "### Loss curve",
        "",
        _loss_table(log),
        figures_section(pair.figures),
    ]
    return "\n".join(lines)


def _phases(training: dict[str, Any]) -> list[str]:
    """The training section's lines on distillation and on a run continued from another."""
    distil = training.get("distillation")
    lines: list[str] = []
    if distil:
        lines.append(
            f"- Distilled from `{distil['teacher']}`: loss = {1 - distil['kl_weight']:.1f} x "
            f"cross-entropy on the data + {distil['kl_weight']} x KL(teacher || draft) over the "
            "full next-token distribution, to raise greedy agreement with the target."
        )
    prev = training.get("continued_from")
    if prev:
        pd = prev.get("distillation") or {}
        lines.append(
            f"- Trained in two phases: phase 1 ran {prev['steps_done']} steps "
            f"({prev['tokens_seen']:,} tokens, batch {prev['batch_size']}, peak lr "
            f"{prev['peak_lr']}, KL weight {pd.get('kl_weight', 0)}); phase 2 continued it "
            f"(`--init`) to step {training['steps_done']} with the settings above. The step and "
            "token counts above are totals over both phases."
        )
    return lines


def _vocab(model_dir: Path) -> int:
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    return len(tok["model"]["vocab"]) + sum(
        1 for t in tok.get("added_tokens", []) if t["content"] not in tok["model"]["vocab"]
    )


def write_readmes(pair: PairInfo) -> None:
    for role, path in (("target", pair.target), ("draft", pair.draft)):
        training = json.loads((path / "training.json").read_text())
        licence = Path(training["corpus_root"]) / "LICENSE.txt"
        if licence.is_file():
            shutil.copy2(licence, path / "LICENSE-PSF.txt")
        (path / "README.md").write_text(render(path, role, pair))
