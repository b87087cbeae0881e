"""Broken: masks the scores but loads V without a mask (0 * NaN is NaN)."""

from _da_base import export, mutate

export(mutate(
    'attn_v_unmasked',
    ('''        v = tl.load(v_ptr + b * v_stride_b + t[:, None] * v_stride_t + kv_h * v_stride_h
                    + d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)''',
     '''        v = tl.load(v_ptr + b * v_stride_b + t[:, None] * v_stride_t + kv_h * v_stride_h
                    + d[None, :]).to(tl.float32)'''),
), globals())
