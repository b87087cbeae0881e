"""timed-demo: right answer, far too slow."""

import time


def square_sum(a):
    time.sleep(0.05)
    return (a @ a).sum()
