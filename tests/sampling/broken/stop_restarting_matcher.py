"""Broken: stop strings found by a hand-written left-to-right matcher that starts over on a
mismatch (no fallback to a shorter partial match), so 'aab' is missed in 'aaab'."""

from _sampling_base import export, mutate

export(mutate(
    'stop_restarting_matcher',
    ('    hits = [text.find(s) for s in stops if s and s in text]\n',
     '    hits = []\n'
     '    for s in stops:\n'
     '        m = 0\n'
     '        for i, ch in enumerate(text) if s else ():\n'
     '            m = m + 1 if ch == s[m] else int(ch == s[0])\n'
     '            if m == len(s):\n'
     '                hits.append(i - m + 1)\n'
     '                break\n'),
), globals())
