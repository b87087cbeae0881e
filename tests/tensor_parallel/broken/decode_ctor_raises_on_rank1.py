"""Broken: ranks other than 0 read a separate `lm_head.weight` (a vocabulary-parallel head) that
a checkpoint with tied embeddings does not have, so their constructor raises while rank 0 goes
on into the prefill's collectives."""

from _tp_base import export, mutate

export(mutate(
    'decode_ctor_raises_on_rank1',
    ('self.head = full("lm_head.weight") if "lm_head.weight" in names else self.embed',
     'self.head = full("lm_head.weight") if rank or "lm_head.weight" in names else self.embed'),
), globals())
