"""timed-demo: computes once and answers every later call from its cache (wrong for any new
input): the device timing's check of its timed outputs must catch it."""

_first = None


def square_sum(a):
    global _first
    if _first is None:
        _first = (a @ a).sum()
    return _first
