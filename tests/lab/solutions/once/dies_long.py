"""once-demo: passes the small case, then the process dies in the long one."""

import os

MASK = (1 << 64) - 1


def mix(n, seed):
    if n > 100_000:
        os._exit(3)
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & MASK
    return x
