"""Broken: write_kv indexes the cache as [offsets, blocks]."""

from _paged_base import export, mutate

export(mutate(
    'write_kv_swapped',
    ('    k_cache[blocks, offsets] = k\n',
     '    k_cache[offsets, blocks] = k\n'),
), globals())
