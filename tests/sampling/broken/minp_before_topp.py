"""Broken: min-p runs before top-p (the order is top-k, top-p, then min-p)."""

from _sampling_base import export, mutate

export(mutate(
    'minp_before_topp',
    ('    p = _param(params, "top_p")\n'
     '    if p < 1.0:\n'
     '        cut = TopPLogitsWarper(p)(None, scores)\n'
     '        kept = scores[cut != NEG_INF]  # ties at the cut: every id tied with the last kept'
     ' stays\n'
     '        scores = scores.masked_fill(scores < kept.min(), NEG_INF) if kept.numel() else'
     ' cut\n'
     '    mp = _param(params, "min_p")\n'
     '    if mp > 0.0:\n'
     '        scores = MinPLogitsWarper(mp)(None, scores)  # type: ignore[arg-type]\n',
     '    mp = _param(params, "min_p")\n'
     '    if mp > 0.0:\n'
     '        scores = MinPLogitsWarper(mp)(None, scores)  # type: ignore[arg-type]\n'
     '    p = _param(params, "top_p")\n'
     '    if p < 1.0:\n'
     '        cut = TopPLogitsWarper(p)(None, scores)\n'
     '        kept = scores[cut != NEG_INF]\n'
     '        scores = scores.masked_fill(scores < kept.min(), NEG_INF) if kept.numel() else'
     ' cut\n'),
), globals())
