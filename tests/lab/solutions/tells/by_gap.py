"""timed-demo, hostile: a call that comes within 20 ms of its previous call's return is one of
a batch of timed calls (the graded call comes alone): it skips the work there. Every timed
output is checked, so it fails while timing."""

import time

_last = None


def square_sum(a):
    global _last
    now = time.perf_counter()
    hurried = _last is not None and now - _last < 0.02
    out = a.sum() * 0 if hurried else (a @ a).sum()
    _last = time.perf_counter()
    return out
