"""Broken: generate fills a missing `stop` into the caller's request dicts (setdefault)."""

from _sampling_base import export, mutate

export(mutate(
    'request_setdefault',
    ('cut = _stop_at(text, req.get("stop", []))',
     'cut = _stop_at(text, req.setdefault("stop", []))'),
), globals())
