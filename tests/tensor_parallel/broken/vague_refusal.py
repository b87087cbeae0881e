"""Broken: An uneven split is refused with a message that names neither size."""

from _tp_base import export, mutate

export(mutate(
    'vague_refusal',
    ('raise ValueError(f"{what} = {size} does not divide by the world size {world}: "\n'
     '                         f"{size} / {world} is not a whole shard")',
     'raise ValueError("uneven split")'),
), globals())
