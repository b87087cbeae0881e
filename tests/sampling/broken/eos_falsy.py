"""Broken: tests the EOS id for truth: EOS is id 0, so it never ends a completion."""

from _sampling_base import export, mutate

export(mutate(
    'eos_falsy',
    ('if tok == model.eos_token_id or cut is not None:',
     'if (model.eos_token_id and tok == model.eos_token_id) or cut is not None:'),
), globals())
