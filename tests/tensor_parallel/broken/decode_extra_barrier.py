"""Broken: A barrier after every layer: right tokens, extra collectives on the wire each step."""

from _tp_base import export, mutate

export(mutate(
    'decode_extra_barrier',
    ('            h = h + mlp.forward(rms_norm(h, ln2, eps))\n',
     '            h = h + mlp.forward(rms_norm(h, ln2, eps))\n'
     '            dist.barrier(group=attn.group)\n'),
), globals())
