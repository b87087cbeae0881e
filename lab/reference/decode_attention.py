# ruff: noqa: E741  (m, l, acc: the running max, sum and accumulator, named as in FlashAttention)
"""Reference for `decode-attention`: four Triton kernels, from a row softmax to flash-decoding.

- `softmax`: one program per row, the whole row in one block (masked past the width, `-inf`
  there so padding adds nothing), max subtracted before `exp`, fp32 arithmetic, stored in the
  input's dtype.
- `decode_attention`: one program per (sequence, query head) over a contiguous KV cache
  [B, max_len, kv_heads, head_dim]; query head h reads KV head h // (heads // kv_heads); the
  keys are visited in tiles of BLOCK_N with an online softmax (running max m, running sum l,
  accumulator rescaled by exp(m_old - m_new)); fp32 throughout.
- `paged_decode_attention`: the same over a paged pool [num_blocks, block_size, kv_heads,
  head_dim], one tile per logical block, its physical block read from the block table.
- `split_partials` + `combine` (`flash_decode`): program (b, h, s) covers tokens
  [s * T, (s + 1) * T) of sequence b and writes its max, its sum of exp(score - max) and its
  unnormalised accumulator (an empty split: -inf, 0, 0); the combine kernel rescales every split
  by exp(m_s - M) with M the largest finite max, and divides.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl


# -- level 1 --------------------------------------------------------------------------------------
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf"))
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor [rows, n]; same dtype as x."""
    rows, n = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, n, x.stride(0), out.stride(0),
                            BLOCK=triton.next_power_of_2(n))
    return out


# -- level 2 --------------------------------------------------------------------------------------
@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, lens_ptr, scale,
                     q_stride_b, q_stride_h, k_stride_b, k_stride_t, k_stride_h,
                     v_stride_b, v_stride_t, v_stride_h, o_stride_b, o_stride_h,
                     GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kv_h = h // GROUP
    d = tl.arange(0, HEAD_DIM)
    n = tl.load(lens_ptr + b)
    q = tl.load(q_ptr + b * q_stride_b + h * q_stride_h + d).to(tl.float32)
    m = float("-inf")
    l = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        t = start + tl.arange(0, BLOCK_N)
        valid = t < n
        k = tl.load(k_ptr + b * k_stride_b + t[:, None] * k_stride_t + kv_h * k_stride_h
                    + d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + b * v_stride_b + t[:, None] * v_stride_t + kv_h * v_stride_h
                    + d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * scale
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(out_ptr + b * o_stride_b + h * o_stride_h + d,
             (acc / l).to(out_ptr.dtype.element_ty))


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per sequence over its contiguous cache: q [B, H, D], k/v [B, max_len, KVH, D],
    seq_lens int32 [B] (>= 1); returns [B, H, D] in q's dtype."""
    B, H, D = q.shape
    out = torch.empty_like(q)
    attention_kernel[(B, H)](q, k, v, out, seq_lens, scale,
                             q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                             v.stride(0), v.stride(1), v.stride(2), out.stride(0),
                             out.stride(1), GROUP=H // k.shape[2], HEAD_DIM=D, BLOCK_N=32)
    return out


# -- level 3 --------------------------------------------------------------------------------------
@triton.jit
def paged_attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, tables_ptr, lens_ptr, scale,
                           q_stride_b, q_stride_h, k_stride_blk, k_stride_t, k_stride_h,
                           v_stride_blk, v_stride_t, v_stride_h, o_stride_b, o_stride_h,
                           table_stride_b, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_SIZE: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kv_h = h // GROUP
    d = tl.arange(0, HEAD_DIM)
    n = tl.load(lens_ptr + b)
    q = tl.load(q_ptr + b * q_stride_b + h * q_stride_h + d).to(tl.float32)
    m = float("-inf")
    l = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for j in range(0, tl.cdiv(n, BLOCK_SIZE)):
        block = tl.load(tables_ptr + b * table_stride_b + j).to(tl.int64)
        slot = tl.arange(0, BLOCK_SIZE)
        valid = j * BLOCK_SIZE + slot < n
        k = tl.load(k_ptr + block * k_stride_blk + slot[:, None] * k_stride_t
                    + kv_h * k_stride_h + d[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + block * v_stride_blk + slot[:, None] * v_stride_t
                    + kv_h * v_stride_h + d[None, :], mask=valid[:, None], other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), axis=1) * scale
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        m = m_new
    tl.store(out_ptr + b * o_stride_b + h * o_stride_h + d,
             (acc / l).to(out_ptr.dtype.element_ty))


def paged_decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float) -> torch.Tensor:
    """One query per sequence over its paged cache (the paged-kv lab's layout): q [B, H, D],
    k_cache/v_cache [num_blocks, block_size, KVH, D], block_tables int32 [B, max_blocks],
    context_lens int32 [B] (>= 1); returns [B, H, D] in q's dtype."""
    B, H, D = q.shape
    out = torch.empty_like(q)
    paged_attention_kernel[(B, H)](
        q, k_cache, v_cache, out, block_tables, context_lens, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), out.stride(0), out.stride(1),
        block_tables.stride(0), GROUP=H // k_cache.shape[2], HEAD_DIM=D,
        BLOCK_SIZE=k_cache.shape[1])
    return out


# -- level 4 --------------------------------------------------------------------------------------
def split_tokens(context_lens: torch.Tensor, block_size: int, num_splits: int) -> int:
    """Tokens per split: the longest sequence's blocks shared out over num_splits, whole blocks."""
    longest_blocks = triton.cdiv(int(context_lens.max()), block_size)
    return triton.cdiv(longest_blocks, num_splits) * block_size


@triton.jit
def split_kernel(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr, tables_ptr, lens_ptr, scale,
                 q_stride_b, q_stride_h, k_stride_blk, k_stride_t, k_stride_h,
                 v_stride_blk, v_stride_t, v_stride_h, table_stride_b, split_tokens,
                 m_stride_b, m_stride_h, acc_stride_b, acc_stride_h, acc_stride_s,
                 GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    s_id = tl.program_id(2)
    kv_h = h // GROUP
    d = tl.arange(0, HEAD_DIM)
    n = tl.load(lens_ptr + b)
    q = tl.load(q_ptr + b * q_stride_b + h * q_stride_h + d).to(tl.float32)
    m = float("-inf")
    l = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    first = s_id * split_tokens
    last = tl.minimum(first + split_tokens, n)
    for j in range(first // BLOCK_SIZE, tl.cdiv(last, BLOCK_SIZE)):
        block = tl.load(tables_ptr + b * table_stride_b + j).to(tl.int64)
        slot = tl.arange(0, BLOCK_SIZE)
        valid = j * BLOCK_SIZE + slot < last
        k = tl.load(k_ptr + block * k_stride_blk + slot[:, None] * k_stride_t
                    + kv_h * k_stride_h + d[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + block * v_stride_blk + slot[:, None] * v_stride_t
                    + kv_h * v_stride_h + d[None, :], mask=valid[:, None], other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), axis=1) * scale
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        m = m_new
    tl.store(m_ptr + b * m_stride_b + h * m_stride_h + s_id, m)
    tl.store(l_ptr + b * m_stride_b + h * m_stride_h + s_id, l)
    tl.store(acc_ptr + b * acc_stride_b + h * acc_stride_h + s_id * acc_stride_s + d, acc)


def split_partials(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                   block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                   num_splits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each sequence's tokens in num_splits ranges of split_tokens(...) tokens; per (b, h, s):
    m [B, H, S] the split's largest score (-inf when empty), l [B, H, S] its sum of
    exp(score - m) (0 when empty), acc [B, H, S, D] its sum of exp(score - m) * v (0 when
    empty), all fp32."""
    B, H, D = q.shape
    block_size = k_cache.shape[1]
    tokens = split_tokens(context_lens, block_size, num_splits)
    m = torch.empty((B, H, num_splits), dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty((B, H, num_splits, D), dtype=torch.float32, device=q.device)
    split_kernel[(B, H, num_splits)](
        q, k_cache, v_cache, m, l, acc, block_tables, context_lens, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), block_tables.stride(0), tokens,
        m.stride(0), m.stride(1), acc.stride(0), acc.stride(1), acc.stride(2),
        GROUP=H // k_cache.shape[2], HEAD_DIM=D, BLOCK_SIZE=block_size)
    return m, l, acc


@triton.jit
def combine_kernel(m_ptr, l_ptr, acc_ptr, out_ptr, num_splits, m_stride_b, m_stride_h,
                   acc_stride_b, acc_stride_h, acc_stride_s, o_stride_b, o_stride_h,
                   HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.arange(0, SPLITS)
    d = tl.arange(0, HEAD_DIM)
    used = s < num_splits
    m = tl.load(m_ptr + b * m_stride_b + h * m_stride_h + s, mask=used, other=float("-inf"))
    l = tl.load(l_ptr + b * m_stride_b + h * m_stride_h + s, mask=used, other=0.0)
    acc = tl.load(acc_ptr + b * acc_stride_b + h * acc_stride_h + s[:, None] * acc_stride_s
                  + d[None, :], mask=used[:, None], other=0.0)
    top = tl.max(m, axis=0)
    w = tl.where(m > float("-inf"), tl.exp(m - top), 0.0)
    total = tl.sum(l * w, axis=0)
    out = tl.sum(acc * w[:, None], axis=0) / total
    tl.store(out_ptr + b * o_stride_b + h * o_stride_h + d, out.to(out_ptr.dtype.element_ty))


def combine(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor,
            dtype: torch.dtype) -> torch.Tensor:
    """The splits' partials combined by log-sum-exp: [B, H, D] in `dtype`."""
    B, H, S, D = acc.shape
    out = torch.empty((B, H, D), dtype=dtype, device=acc.device)
    combine_kernel[(B, H)](m, l, acc, out, S, m.stride(0), m.stride(1), acc.stride(0),
                           acc.stride(1), acc.stride(2), out.stride(0), out.stride(1),
                           HEAD_DIM=D, SPLITS=triton.next_power_of_2(S))
    return out


def flash_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                 block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                 num_splits: int) -> torch.Tensor:
    """Split-K decode attention: partials per split, then their log-sum-exp combine."""
    m, l, acc = split_partials(q, k_cache, v_cache, block_tables, context_lens, scale,
                               num_splits)
    return combine(m, l, acc, q.dtype)


__all__: list[Any] = [
    "combine",
    "decode_attention",
    "flash_decode",
    "paged_decode_attention",
    "softmax",
    "split_partials",
]
