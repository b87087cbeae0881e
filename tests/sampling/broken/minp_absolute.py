"""Broken: min-p compares probabilities with min_p itself, not min_p x the top probability."""

from _sampling_base import export, mutate

export(mutate(
    'minp_absolute',
    ('        scores = MinPLogitsWarper(mp)(None, scores)  # type: ignore[arg-type]\n',
     '        probs = scores.softmax(-1)\n'
     '        drop = probs < mp\n'
     '        drop[0, probs[0].argmax()] = False\n'
     '        scores = scores.masked_fill(drop, NEG_INF)\n'),
), globals())
