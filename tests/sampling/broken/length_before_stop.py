"""Broken: max_tokens is checked before EOS and the stop strings, so a request whose last
allowed token is EOS or completes a stop string finishes 'length' (with the stop string kept)."""

from _sampling_base import export, mutate

export(mutate(
    'length_before_stop',
    ('    if tok == model.eos_token_id or cut is not None:\n',
     '    if len(out) < int(req["max_tokens"]) and (\n'
     '            tok == model.eos_token_id or cut is not None):\n'),
), globals())
