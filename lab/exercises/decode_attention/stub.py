"""decode-attention: Triton kernels for decode attention (see `dojo lab show decode-attention`).

Write each kernel's body, then delete the `raise NotImplementedError` line of its launcher.
Grade with `dojo lab grade decode-attention --level 1` (or `dojo lab watch decode-attention`).
On a CPU the kernels run under Triton's interpreter (the grader sets TRITON_INTERPRET=1 before
this file imports triton): fp32 and fp16 are graded; the speed part needs a GPU.

Conventions (every level): tensors are torch tensors with a contiguous last dimension; head_dim
and block_size are powers of two; every length is >= 1; compute in fp32 and store in the
output's dtype; never write into an input.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


# -- level 1: row softmax -------------------------------------------------------------------------
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride,
                   BLOCK: tl.constexpr):
    # program r: row r. Load its n_cols values (lanes past n_cols masked: they must not count),
    # in fp32; subtract the row max; exp; divide by the sum; store in out's dtype.
    pass


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor [rows, n]; same dtype as x."""
    raise NotImplementedError("softmax: write softmax_kernel, then delete this line")
    rows, n = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, n, x.stride(0), out.stride(0),
                            BLOCK=triton.next_power_of_2(n))
    return out


# -- level 2: one query per sequence over a contiguous KV cache ----------------------------------
@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, lens_ptr, scale,
                     q_stride_b, q_stride_h, k_stride_b, k_stride_t, k_stride_h,
                     v_stride_b, v_stride_t, v_stride_h, o_stride_b, o_stride_h,
                     GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    # program (b, h): sequence b, query head h, which reads KV head h // GROUP.
    # Visit the keys 0 .. seq_lens[b] - 1 in tiles of BLOCK_N with an online softmax: a running
    # max m, a running sum l of exp(score - m), an accumulator of exp(score - m) * v, both
    # rescaled by exp(m_old - m_new) when m grows. out = acc / l.
    pass


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """q [B, H, D], k/v [B, max_len, KVH, D], seq_lens int32 [B]; returns [B, H, D] (q's dtype)."""
    raise NotImplementedError("decode_attention: write attention_kernel, then delete this line")
    B, H, D = q.shape
    out = torch.empty_like(q)
    attention_kernel[(B, H)](q, k, v, out, seq_lens, scale,
                             q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                             v.stride(0), v.stride(1), v.stride(2), out.stride(0),
                             out.stride(1), GROUP=H // k.shape[2], HEAD_DIM=D, BLOCK_N=32)
    return out


# -- level 3: paged KV ----------------------------------------------------------------------------
@triton.jit
def paged_attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, tables_ptr, lens_ptr, scale,
                           q_stride_b, q_stride_h, k_stride_blk, k_stride_t, k_stride_h,
                           v_stride_blk, v_stride_t, v_stride_h, o_stride_b, o_stride_h,
                           table_stride_b, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_SIZE: tl.constexpr):
    # program (b, h): as level 2, one tile per logical block j < cdiv(context_lens[b],
    # BLOCK_SIZE); its K/V sit in physical block tables[b, j] of the pool.
    pass


def paged_decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float) -> torch.Tensor:
    """q [B, H, D], k_cache/v_cache [num_blocks, block_size, KVH, D], block_tables int32
    [B, max_blocks], context_lens int32 [B]; returns [B, H, D] (q's dtype)."""
    raise NotImplementedError("paged_decode_attention: write paged_attention_kernel, then "
                              "delete this line")
    B, H, D = q.shape
    out = torch.empty_like(q)
    paged_attention_kernel[(B, H)](
        q, k_cache, v_cache, out, block_tables, context_lens, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), out.stride(0), out.stride(1),
        block_tables.stride(0), GROUP=H // k_cache.shape[2], HEAD_DIM=D,
        BLOCK_SIZE=k_cache.shape[1])
    return out


# -- level 4: split-K (flash-decoding) ------------------------------------------------------------
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
    # program (b, h, s): tokens [s * split_tokens, min((s + 1) * split_tokens, n)) of sequence b.
    # Write m (largest score), l (sum of exp(score - m)) and acc (sum of exp(score - m) * v, not
    # divided by l). An empty split writes m = -inf, l = 0, acc = 0.
    pass


def split_partials(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                   block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                   num_splits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """m [B, H, S], l [B, H, S], acc [B, H, S, D], all fp32 (S = num_splits)."""
    raise NotImplementedError("split_partials: write split_kernel, then delete this line")
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
    # program (b, h): M = the largest m over the splits; weight split s by exp(m_s - M) (0 for an
    # empty split); out = sum_s w_s * acc_s / sum_s w_s * l_s, stored in out's dtype.
    pass


def combine(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor,
            dtype: torch.dtype) -> torch.Tensor:
    """The splits' partials combined by log-sum-exp: [B, H, D] in `dtype`."""
    raise NotImplementedError("combine: write combine_kernel, then delete this line")
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
