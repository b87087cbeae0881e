# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: a physical block addressed as block * k_stride_t (one token) instead of block * k_stride_blk."""

from _da_base import export, mutate

export(mutate(
    'paged_block_stride',
    ('''        k = tl.load(k_ptr + block * k_stride_blk + slot[:, None] * k_stride_t\n                    + kv_h * k_stride_h + d[None, :], mask=valid[:, None], other=0.0)\n        v = tl.load(v_ptr + block * v_stride_blk + slot[:, None] * v_stride_t\n                    + kv_h * v_stride_h + d[None, :], mask=valid[:, None], other=0.0)\n        s = tl.sum(q[None, :] * k.to(tl.float32), axis=1) * scale\n        s = tl.where(valid, s, float("-inf"))\n        m_new = tl.maximum(m, tl.max(s, axis=0))\n        alpha = tl.exp(m - m_new)\n        p = tl.exp(s - m_new)\n        l = l * alpha + tl.sum(p, axis=0)\n        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)\n        m = m_new\n    tl.store(out_ptr''', '''        k = tl.load(k_ptr + block * k_stride_t + slot[:, None] * k_stride_t\n                    + kv_h * k_stride_h + d[None, :], mask=valid[:, None], other=0.0)\n        v = tl.load(v_ptr + block * v_stride_t + slot[:, None] * v_stride_t\n                    + kv_h * v_stride_h + d[None, :], mask=valid[:, None], other=0.0)\n        s = tl.sum(q[None, :] * k.to(tl.float32), axis=1) * scale\n        s = tl.where(valid, s, float("-inf"))\n        m_new = tl.maximum(m, tl.max(s, axis=0))\n        alpha = tl.exp(m - m_new)\n        p = tl.exp(s - m_new)\n        l = l * alpha + tl.sum(p, axis=0)\n        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)\n        m = m_new\n    tl.store(out_ptr'''),
), globals())
