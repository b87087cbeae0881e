# ruff: noqa: E501
"""Correct but a Python loop over each sequence's table entries (one slice per block): a class
the timed gather measures (bench/gates.py) but does not judge: on a CPU it is 1.2-2.4x the
reference, under the gate (on a GPU every slice would be a kernel launch)."""

from _paged_base import export, mutate

export(mutate(
    'gather_block_loop',
    ('    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]\n    values = v_cache[block_tables].reshape(B, width, kvh, D)',
     '    rows = block_tables.tolist()\n    keys = torch.stack([torch.cat([k_cache[blk] for blk in row]) for row in rows])\n    values = torch.stack([torch.cat([v_cache[blk] for blk in row]) for row in rows])'),
), globals())
