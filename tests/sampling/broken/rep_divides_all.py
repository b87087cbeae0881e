"""Broken: the repetition penalty divides every seen logit, negative ones too."""

from _sampling_base import export, mutate

export(mutate(
    'rep_divides_all',
    ('        scores = RepetitionPenaltyLogitsProcessor(rep)(ids, scores)\n',
     '        seen = sorted(set(history))\n'
     '        scores[0, seen] = scores[0, seen] / rep\n'),
), globals())
