"""once-demo: the reference's loop, written again."""

MASK = (1 << 64) - 1


def mix(n, seed):
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & MASK
    return x
