"""Benchmark the paged-kv reference on the shipped target: paged vs contiguous KV, side by side.

    python bench/paged_kv.py [--device auto|cpu|cuda] [--seqs 16] [--new 48] [--reserve 1024]

The same batch of sequences (prompts of 8-120 tokens from the target's corpus, `--new` greedy
tokens each) is decoded twice with the model's own arithmetic (lab/exercises/paged_kv/runtime.py):
1. contiguous: one K/V buffer per sequence reserved at `--reserve` tokens (the model's 1,024
   positions by default — what a server reserves when it must honour max_tokens), attention over
   each row's first context_len slots;
2. paged: the reference BlockManager (block_size 16) and its vectorised gather over one pool.
Outputs must be equal token for token. Printed side by side: decode tok/s, and KV memory (peak
blocks in use vs the contiguous reservation), plus the seed question worked
through the reference BlockManager (64 requests averaging ~600 tokens vs 8,192 reserved each).
Run it with `nice`; figures on a shared CPU are noisy, compare ratios within one run.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BLOCK = 16


def _prompts(n: int, seed: int) -> list[list[int]]:
    from lab.exercises.paged_kv.grading.level4 import _corpus_ids

    ids = _corpus_ids()
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(8, 120)
        start = rng.randrange(0, len(ids) - length)
        out.append(list(ids[start:start + length]))
    return out


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _contiguous(model: Any, prompts: list[list[int]], new: int, reserve: int,
                device: str) -> tuple[float, list[list[int]], int]:
    """Decode with a contiguous [layers, B, reserve, kv_heads, D] cache; (decode s, outputs,
    reserved token slots)."""
    import torch

    from lab.exercises.paged_kv.runtime import PagedDecoder

    B = len(prompts)
    shape = (model.layers, B, reserve, model.kv_heads, model.head_dim)
    k_cache = torch.zeros(shape, device=model.device)
    v_cache = torch.zeros(shape, device=model.device)
    outs: list[list[int]] = []
    prefill = PagedDecoder(model, num_blocks=B * (reserve // BLOCK), block_size=BLOCK)
    for b, prompt in enumerate(prompts):  # prefill row b through a throwaway paged view
        base = b * (reserve // BLOCK)
        slots = [(base + p // BLOCK, p % BLOCK) for p in range(len(prompt))]
        logits = prefill.prefill(prompt, slots, _write)
        outs.append([int(logits.argmax())])
    pool_k = prefill.k_pool.view(model.layers, B, reserve, model.kv_heads, model.head_dim)
    pool_v = prefill.v_pool.view(model.layers, B, reserve, model.kv_heads, model.head_dim)
    k_cache.copy_(pool_k)
    v_cache.copy_(pool_v)
    del prefill
    lens = torch.tensor([len(p) for p in prompts], device=model.device)
    rows = torch.arange(B, device=model.device)
    _sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(new - 1):
            ids = torch.tensor([o[-1] for o in outs], device=model.device)
            cos, sin = model.rotary(lens)
            h = model.embed[ids]
            for i in range(model.layers):
                q, k, v = model.qkv(i, h, cos, sin)
                k_cache[i, rows, lens] = k
                v_cache[i, rows, lens] = v
                attn = _dense_attention(q, k_cache[i], v_cache[i], lens + 1, model.scale)
                h = model.finish_layer(i, h, attn)
            for b, token in enumerate(model.logits(h).argmax(-1).tolist()):
                outs[b].append(int(token))
            lens = lens + 1
    _sync(device)
    return time.perf_counter() - start, outs, B * reserve


def _dense_attention(q: Any, keys: Any, values: Any, lens: Any, scale: float) -> Any:
    import torch

    B, H, D = q.shape
    kvh = keys.shape[2]
    width = int(lens.max())  # attend over the filled prefix of the reserved buffer
    keys, values = keys[:, :width], values[:, :width]
    grouped = q.reshape(B, kvh, H // kvh, D)
    scores = torch.einsum("bkgd,btkd->bkgt", grouped, keys) * scale
    valid = torch.arange(width, device=q.device)[None, :] < lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    return torch.einsum("bkgt,btkd->bkgd", torch.softmax(scores, -1), values).reshape(B, H, D)


def _write(k_cache: Any, v_cache: Any, blocks: Any, offsets: Any, k: Any, v: Any) -> None:
    k_cache[blocks, offsets] = k
    v_cache[blocks, offsets] = v


def _paged(model: Any, prompts: list[list[int]], new: int,
           device: str) -> tuple[float, list[list[int]], int]:
    """Decode with the reference BlockManager and gather; (decode s, outputs, peak slots)."""
    from lab.exercises.paged_kv.runtime import PagedDecoder
    from lab.reference import paged_kv as ref

    B = len(prompts)
    num_blocks = sum(-(-(len(p) + new) // BLOCK) for p in prompts)
    dec = PagedDecoder(model, num_blocks, BLOCK)
    bm = ref.BlockManager(num_blocks, BLOCK)
    outs: list[list[int]] = []
    for b, prompt in enumerate(prompts):
        bm.allocate(b, prompt)
        table = bm.block_table(b)
        slots = [(table[p // BLOCK], p % BLOCK) for p in range(len(prompt))]
        outs.append([int(dec.prefill(prompt, slots, ref.write_kv).argmax())])
    peak = num_blocks - bm.num_free()
    _sync(device)
    start = time.perf_counter()
    for _ in range(new - 1):
        slots, positions = [], []
        for b in range(B):
            block, offset, _ = bm.append_slot(b, outs[b][-1])
            slots.append((block, offset))
            positions.append(len(prompts[b]) + len(outs[b]) - 1)
        logits = dec.step([o[-1] for o in outs], positions, slots,
                          [bm.block_table(b) for b in range(B)], ref.write_kv,
                          ref.paged_attention)
        for b, token in enumerate(logits.argmax(-1).tolist()):
            outs[b].append(int(token))
        peak = max(peak, num_blocks - bm.num_free())
    _sync(device)
    return time.perf_counter() - start, outs, peak * BLOCK


def _seed_question() -> str:
    """64 requests averaging ~600 tokens through the reference BlockManager vs 8,192 each."""
    from lab.reference import paged_kv as ref

    rng = random.Random(0)
    reqs = [rng.randint(100, 1100) for _ in range(64)]
    bm = ref.BlockManager(sum(-(-n // BLOCK) for n in reqs), BLOCK)
    for i, n in enumerate(reqs):
        bm.allocate(i, [2] * n)
    used = bm.num_blocks - bm.num_free()
    contiguous = 64 * 8192
    return (f"seed question: 64 requests averaging {sum(reqs) / 64:.0f} tokens -> paged "
            f"{used * BLOCK:,} token slots ({used:,} blocks, last-block waste "
            f"{(used * BLOCK - sum(reqs)) / (used * BLOCK):.1%}) vs contiguous {contiguous:,} "
            f"reserved at 8,192 each: {used * BLOCK / contiguous:.1%} of the memory, "
            f"{contiguous / (used * BLOCK):.1f}x more sequences fit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seqs", type=int, default=16)
    parser.add_argument("--new", type=int, default=48)
    parser.add_argument("--reserve", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from lab.exercises.paged_kv.runtime import load_model
    from lab.models import resolve_device

    device = resolve_device(args.device)
    if device == "cpu":
        torch.set_num_threads(1)
    model = load_model(device)
    prompts = _prompts(args.seqs, args.seed)
    longest = max(len(p) for p in prompts) + args.new
    if longest > args.reserve:
        parser.error(f"--reserve {args.reserve} is below the longest sequence ({longest})")
    _paged(model, prompts[:2], 3, device)  # warm-up (kernels, allocator)
    t_paged, paged, paged_slots = _paged(model, prompts, args.new, device)
    t_cont, cont, cont_slots = _contiguous(model, prompts, args.new, args.reserve, device)
    same = paged == cont
    per_token = 2 * model.layers * model.kv_heads * model.head_dim * 4  # fp32 K and V
    tokens = args.seqs * (args.new - 1)
    print(f"device {device}; {args.seqs} sequences, prompts {min(map(len, prompts))}-"
          f"{max(map(len, prompts))} tokens, {args.new} new tokens each, block_size {BLOCK}")
    print(f"outputs equal token for token: {'yes' if same else 'NO'}")
    print(f"{'':24}{'contiguous':>14}{'paged':>14}{'paged/contig':>14}")
    print(f"{'decode tok/s':24}{tokens / t_cont:>14,.0f}{tokens / t_paged:>14,.0f}"
          f"{t_cont / t_paged:>13.2f}x")
    print(f"{'KV token slots':24}{cont_slots:>14,}{paged_slots:>14,}"
          f"{paged_slots / cont_slots:>13.1%}")
    print(f"{'KV MiB (fp32)':24}{cont_slots * per_token / 2**20:>14,.1f}"
          f"{paged_slots * per_token / 2**20:>14,.1f}"
          f"  saved {(cont_slots - paged_slots) * per_token / 2**20:,.1f} MiB")
    print(_seed_question())
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
