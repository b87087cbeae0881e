"""Broken: min-p written by hand with `<=`, so an id whose probability equals min_p x the top
probability exactly is dropped (transformers' MinPLogitsWarper drops only `<`)."""

from _sampling_base import export, mutate

export(mutate(
    'minp_le_threshold',
    ('        scores = MinPLogitsWarper(mp)(None, scores)  # type: ignore[arg-type]\n',
     '        probs = scores.softmax(-1)\n'
     '        drop = probs <= mp * probs.amax(-1, keepdim=True)\n'
     '        drop[0, int(probs.argmax())] = False\n'
     '        scores = scores.masked_fill(drop, NEG_INF)\n'),
), globals())
