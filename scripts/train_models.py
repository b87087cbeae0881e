"""Train the shipped draft/target pair on the interpreter's standard-library source.

Usage (from the repository root; runs on CUDA when present, else CPU). The shipped pair was made
with exactly these commands (97 minutes of training on a 2-core CPU with AVX512-BF16):

    python scripts/train_models.py tokenizer --out lab/models/pycode-target
    python scripts/train_models.py model --role target --out lab/models/pycode-target \
        --minutes 62 --batch 16 --lr 2e-3 --warmup 60 --threads 2 --precision bf16 \
        --save-every 300
    python scripts/train_models.py model --role draft --out lab/models/pycode-draft \
        --tokenizer lab/models/pycode-target --teacher lab/models/pycode-target \
        --minutes 35 --batch 16 --lr 3e-3 --warmup 40 --kl 0.9 --threads 2 --precision bf16 \
        --save-every 300
    python -m lab.models.report --write      # measure and record the figures, write READMEs

The step count follows from the wall-clock budget (the cosine schedule is re-planned from the
measured speed), so a rerun on another machine sees a different number of tokens; fix `--steps`
(with a large `--minutes`) for a bit-for-bit rerun on the same hardware.

Everything is seeded; the corpus rule, file-list hashes, sizes and hyper-parameters go into the
output folder's `training.json`, and the loss curve into `train_log.json`. Checkpoints are written
atomically every `--save-every` seconds, so a run cut short still leaves a usable model.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab.models.corpus import RULE, CorpusSplit, split_corpus

EOS = "<|endoftext|>"
PAD = "<|pad|>"
SEED = 1234


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int


SHAPES: dict[str, Shape] = {
    # ~6.95M and ~0.82M parameters (8.5x), trainable in about an hour on 2 CPU cores. The draft
    # is shallow (2 layers vs 8) because at this size a decode step is mostly per-layer overhead:
    # depth, not width, sets the cost ratio c = draft step / target step.
    "target": Shape(hidden=256, layers=8, heads=8, kv_heads=4, ffn=704),
    "draft": Shape(hidden=128, layers=2, heads=4, kv_heads=2, ffn=256),
}


def train_tokenizer(split: CorpusSplit, out: Path, vocab_size: int = 4096) -> Any:
    """Byte-level BPE: lossless on any text, so decode(encode(src)) == src."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(split.texts("train"), trainer=trainer)
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        eos_token=EOS,
        bos_token=EOS,
        pad_token=PAD,
        unk_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=1024,
    )
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    return fast


def encode_split(tokenizer: Any, split: CorpusSplit, which: str) -> Any:
    """One long id stream: each file's tokens followed by EOS (files are the documents)."""
    import torch

    eos = tokenizer.convert_tokens_to_ids(EOS)
    ids: list[int] = []
    # One batched call: the Rust tokenizer encodes the files in parallel.
    for file_ids in tokenizer(split.texts(which), add_special_tokens=False)["input_ids"]:
        ids.extend(file_ids)
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def build_config(shape: Shape, tokenizer: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.hidden // shape.heads,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids(EOS),
        eos_token_id=tokenizer.convert_tokens_to_ids(EOS),
        pad_token_id=tokenizer.convert_tokens_to_ids(PAD),
        rms_norm_eps=1e-5,
    )


def build_model(shape: Shape, tokenizer: Any) -> Any:
    from transformers import LlamaForCausalLM

    cfg = build_config(shape, tokenizer)
    return LlamaForCausalLM._from_config(cfg, attn_implementation="sdpa")  # type: ignore[no-untyped-call]


def save_checkpoint(model: Any, tokenizer: Any, out: Path, extra: dict[str, Any]) -> None:
    """Write fp16 weights + config + tokenizer to a temp folder, then swap it in atomically."""
    import copy

    import torch
    from transformers import GenerationConfig

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    half = copy.deepcopy(model).to(device="cpu", dtype=torch.float16)
    half.config.dtype = "float16"
    half.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
        bos_token_id=model.config.bos_token_id,
        eos_token_id=model.config.eos_token_id,
        pad_token_id=model.config.pad_token_id,
        do_sample=False,
    )
    half.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    keep = ("README.md", "corpus_train.txt", "corpus_held_out.txt", "figures.json")
    for name in keep:
        if (out / name).exists():
            shutil.copy2(out / name, tmp / name)
    for name, payload in extra.items():
        (tmp / name).write_text(json.dumps(payload, indent=1) + "\n")
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def heldout_loss(model: Any, data: Any, seq: int, device: str, max_windows: int = 64) -> float:
    """Mean next-token loss over non-overlapping held-out windows (deterministic)."""
    import torch

    model.eval()
    n = min(max_windows, (len(data) - 1) // seq)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, n, 8):
            rows = [data[j * seq : j * seq + seq + 1] for j in range(i, min(n, i + 8))]
            batch = torch.stack(rows).to(device)
            logits = model(input_ids=batch[:, :-1]).logits.float()
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1), reduction="sum"
            )
            total += float(loss)
            count += batch[:, 1:].numel()
    model.train()
    return total / count


def _student(args: argparse.Namespace, shape: Shape, tokenizer: Any, device: str
             ) -> tuple[Any, dict[str, Any] | None, list[dict[str, float]]]:
    """A fresh model of `shape`, or the `--init` checkpoint with its training record and
    log (they carry over). Returns (model, record or None, log)."""
    import torch
    from transformers import AutoModelForCausalLM

    if not args.init:
        return build_model(shape, tokenizer).to(device), None, []
    # Continue training an earlier checkpoint (its log and step count carry over).
    model: Any = AutoModelForCausalLM.from_pretrained(args.init, local_files_only=True)
    model = model.to(device=device, dtype=torch.float32)
    prior = json.loads((Path(args.init) / "training.json").read_text())
    prior_log = json.loads((Path(args.init) / "train_log.json").read_text())
    return model, prior, list(prior_log)


def _teacher(args: argparse.Namespace, model: Any, device: str) -> Any:
    """The `--teacher` model to distil from (frozen, fp32), or None."""
    import torch
    from transformers import AutoModelForCausalLM

    if not args.teacher:
        return None
    teacher: Any = AutoModelForCausalLM.from_pretrained(args.teacher, local_files_only=True)
    teacher = teacher.to(device=device, dtype=torch.float32).eval()
    if teacher.config.vocab_size != model.config.vocab_size:
        raise SystemExit("teacher and student vocabularies differ")
    return teacher


def _meta(args: argparse.Namespace, shape: Shape, n_params: int, distilling: bool, device: str,
          split: CorpusSplit, train_ids: Any, held_ids: Any) -> dict[str, Any]:
    """What `training.json` records: the run's shape, hyper-parameters, machine and corpus."""
    import torch

    return {
        "role": args.role,
        "shape": asdict(shape),
        "parameters": n_params,
        "seed": args.seed,
        "seq_len": args.seq,
        "batch_size": args.batch,
        "precision": (
            "bf16 autocast, fp32 master weights" if args.precision == "bf16" else "fp32"
        ),
        "peak_lr": args.lr,
        "warmup_steps": args.warmup,
        "schedule": "linear warm-up, cosine decay to 10% of peak over the planned steps",
        "optimizer": "AdamW(betas=(0.9, 0.95), weight_decay=0.1), grad clip 1.0",
        "distillation": (
            {"teacher": Path(args.teacher).name, "kl_weight": args.kl, "temperature": 1.0}
            if distilling
            else None
        ),
        "device": device,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "corpus_rule": RULE,
        "corpus_root": str(split.root),
        "train_files": len(split.train),
        "held_out_files": len(split.held_out),
        "train_tokens": len(train_ids),
        "held_out_tokens": len(held_ids),
        "train_sha256": split.digest("train"),
        "held_out_sha256": split.digest("held_out"),
    }


def _loss(args: argparse.Namespace, model: Any, teacher: Any, batch: Any,
          autocast: Callable[[], Any]) -> tuple[Any, Any]:
    """The step's loss (cross-entropy, mixed with the KL to the teacher when distilling) and
    its cross-entropy alone."""
    import torch

    with autocast():
        logits = model(input_ids=batch[:, :-1]).logits.float()
    ce = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1)
    )
    if teacher is None:
        return ce, ce
    with torch.no_grad(), autocast():
        t_logits = teacher(input_ids=batch[:, :-1]).logits
    t_logp = torch.log_softmax(t_logits.float(), -1)
    s_logp = torch.log_softmax(logits, -1)
    kl = (t_logp.exp() * (t_logp - s_logp)).sum(-1).mean()
    return (1 - args.kl) * ce + args.kl * kl, ce


def _offsets(prior: dict[str, Any] | None, meta: dict[str, Any]) -> tuple[int, int]:
    """(steps, tokens) done before this run: those of the `--init` checkpoint, recorded in
    `meta` with the settings it was trained with."""
    step0, tokens0 = 0, 0
    if prior is not None:
        step0, tokens0 = prior["steps_done"], prior["tokens_seen"]
        meta["continued_from"] = {
            k: prior[k]
            for k in ("steps_done", "tokens_seen", "peak_lr", "batch_size", "distillation")
        }
    meta["step_offset"], meta["token_offset"] = step0, tokens0
    return step0, tokens0


def _replanned(max_steps: int, step: int, elapsed: float, budget: float) -> int:
    """The planned step count from the measured speed, so that the cosine decay ends near
    the time budget (the machine is shared, so the speed drifts)."""
    per_step = elapsed / step
    return min(max_steps, max(step + 1, step + int((budget - elapsed) / per_step)))


def _data(args: argparse.Namespace) -> tuple[Any, CorpusSplit, Any, Any]:
    """The tokenizer, the seeded corpus split, and the train and held-out token ids."""
    from transformers import PreTrainedTokenizerFast

    tok_dir = Path(args.tokenizer or args.out)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tok_dir, local_files_only=True)
    split = split_corpus(seed=args.seed)
    return (tokenizer, split, encode_split(tokenizer, split, "train"),
            encode_split(tokenizer, split, "held_out"))


def _optimise(model: Any, opt: Any, loss: Any) -> None:
    """One optimiser step on `loss`, gradients clipped to norm 1."""
    import torch

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def train_model(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out = Path(args.out)
    tokenizer, split, train_ids, held_ids = _data(args)
    shape = SHAPES[args.role]
    model, prior, log = _student(args, shape, tokenizer, device)
    n_params = sum(p.numel() for p in model.parameters())
    teacher = _teacher(args, model, device)
    opt = torch.optim.AdamW(
        model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=False
    )
    gen = torch.Generator().manual_seed(args.seed)
    seq, bsz = args.seq, args.batch
    # bf16 matmuls with fp32 master weights: ~1.4x faster on a CPU with AVX512-BF16.
    autocast = functools.partial(torch.autocast, device, dtype=torch.bfloat16,
                                 enabled=args.precision == "bf16")
    meta = _meta(args, shape, n_params, teacher is not None, device, split, train_ids, held_ids)
    out.mkdir(parents=True, exist_ok=True)
    for which, files in (("train", split.train), ("held_out", split.held_out)):
        (out / f"corpus_{which}.txt").write_text("\n".join(files) + "\n")
    step0, tokens0 = _offsets(prior, meta)
    start = last_save = time.monotonic()
    budget, planned, running, step = args.minutes * 60, args.steps, None, 0
    model.train()
    while step < planned:
        elapsed = time.monotonic() - start
        if elapsed > budget:
            break
        if step >= 20 and step % 20 == 0 and args.minutes:
            planned = _replanned(args.steps, step, elapsed, budget)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, planned, args.lr, args.warmup)
        starts = torch.randint(0, len(train_ids) - seq - 1, (bsz,), generator=gen)
        batch = torch.stack([train_ids[s : s + seq + 1] for s in starts.tolist()]).to(device)
        loss, ce = _loss(args, model, teacher, batch, autocast)
        _optimise(model, opt, loss)
        step += 1
        ce_val = ce.item()
        running = ce_val if running is None else 0.95 * running + 0.05 * ce_val
        now = time.monotonic()
        if step % args.log_every == 0 or step == planned:
            entry = {"step": step0 + step, "tokens": tokens0 + step * bsz * seq,
                     "seconds": round(now - start, 1), "train_loss": round(running, 4),
                     "lr": opt.param_groups[0]["lr"]}
            if step % (args.log_every * 5) == 0:
                entry["held_out_loss"] = round(heldout_loss(model, held_ids, seq, device), 4)
            log.append(entry)
            print(json.dumps(entry), flush=True)
        if now - last_save > args.save_every:
            _save(model, tokenizer, out, meta, log, step, planned, held_ids, seq, device)
            last_save = time.monotonic()
    _save(model, tokenizer, out, meta, log, step, planned, held_ids, seq, device, final=True)


def _save(
    model: Any,
    tokenizer: Any,
    out: Path,
    meta: dict[str, Any],
    log: list[dict[str, float]],
    step: int,
    planned: int,
    held_ids: Any,
    seq: int,
    device: str,
    final: bool = False,
) -> None:
    info = dict(meta)
    info.update(
        steps_done=meta["step_offset"] + step,
        steps_planned=planned,
        tokens_seen=meta["token_offset"] + step * meta["batch_size"] * seq,
        finished=final,
    )
    info["held_out_loss"] = round(heldout_loss(model, held_ids, seq, device), 4)
    save_checkpoint(model, tokenizer, out, {"training.json": info, "train_log.json": log})
    done = info["steps_done"]
    print(f"saved {out} at step {done} (held-out loss {info['held_out_loss']})", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenizer", help="train the byte-level BPE tokenizer")
    t.add_argument("--out", required=True)
    t.add_argument("--vocab", type=int, default=4096)
    t.add_argument("--seed", type=int, default=SEED)
    m = sub.add_parser("model", help="train the target or the draft")
    m.add_argument("--role", choices=sorted(SHAPES), required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--tokenizer", help="folder with tokenizer.json (default: --out)")
    m.add_argument("--init", help="continue from this checkpoint instead of a fresh model")
    m.add_argument("--teacher", help="distil from this model (KL to its next-token law)")
    m.add_argument("--kl", type=float, default=0.7, help="weight of the KL term when distilling")
    m.add_argument("--minutes", type=float, default=30.0, help="wall-clock budget")
    m.add_argument("--steps", type=int, default=100_000, help="upper bound on steps")
    m.add_argument("--seq", type=int, default=256)
    m.add_argument("--batch", type=int, default=16)
    m.add_argument("--lr", type=float, default=3e-3)
    m.add_argument("--warmup", type=int, default=50)
    m.add_argument("--seed", type=int, default=SEED)
    m.add_argument(
        "--precision",
        choices=("fp32", "bf16"),
        default="fp32",
        help="bf16 = autocast matmuls to bfloat16 (fp32 master weights and loss)",
    )
    m.add_argument("--threads", type=int, default=int(os.environ.get("TRAIN_THREADS", "0")))
    m.add_argument("--log-every", type=int, default=20)
    m.add_argument("--save-every", type=float, default=300.0, help="seconds between checkpoints")
    args = parser.parse_args(argv)
    if args.cmd == "tokenizer":
        train_tokenizer(split_corpus(seed=args.seed), Path(args.out), args.vocab)
    else:
        train_model(args)


if __name__ == "__main__":
    main()
