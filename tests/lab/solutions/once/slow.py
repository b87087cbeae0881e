"""once-demo: right answer, 20x the CPU work (the loop runs 20 times)."""

MASK = (1 << 64) - 1


def mix(n, seed):
    for _ in range(20):
        x = seed
        for _ in range(n):
            x = (x * 6364136223846793005 + 1442695040888963407) & MASK
    return x
