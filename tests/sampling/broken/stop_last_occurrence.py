"""Broken: the text is cut before the stop string's LAST occurrence (rfind / rsplit), which
differs where a token holds it twice or overlapping ('====' with stop '===')."""

from _sampling_base import export, mutate

export(mutate(
    'stop_last_occurrence',
    ('    hits = [text.find(s) for s in stops if s and s in text]\n',
     '    hits = [text.rfind(s) for s in stops if s and s in text]\n'),
), globals())
