"""Broken: looks for stop strings in the newest token's text only."""

from _sampling_base import export, mutate

export(mutate(
    'stop_new_token_only',
    ('cut = _stop_at(text, req.get("stop", []))',
     'cut = None if _stop_at(model.token_str(tok), req.get("stop", [])) is None else len(text)'),
), globals())
