# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: query head h reads KV head h % kv_heads (tiled) instead of h // group."""

from _da_base import export, mutate

export(mutate(
    'attn_gqa_tiled',
    ('''    b = tl.program_id(0)\n    h = tl.program_id(1)\n    kv_h = h // GROUP\n    d = tl.arange(0, HEAD_DIM)\n    n = tl.load(lens_ptr + b)\n    q = tl.load(q_ptr + b * q_stride_b + h * q_stride_h + d).to(tl.float32)\n    m = float("-inf")\n    l = 0.0\n    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)\n    for start''', '''    b = tl.program_id(0)\n    h = tl.program_id(1)\n    kv_h = h % (tl.num_programs(1) // GROUP)\n    d = tl.arange(0, HEAD_DIM)\n    n = tl.load(lens_ptr + b)\n    q = tl.load(q_ptr + b * q_stride_b + h * q_stride_h + d).to(tl.float32)\n    m = float("-inf")\n    l = 0.0\n    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)\n    for start'''),
), globals())
