"""timed-demo: as fast as the reference."""


def square_sum(a):
    return (a @ a).sum()
