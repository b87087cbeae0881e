"""timed-demo, hostile: right only when its seed looks like the replay seed (under 10^6: timed
calls' seeds are 31-bit), read from the drive's `ctx` in the caller's frame. With every seed
drawn from one range it takes its graded call for a timed one and answers it wrong."""

import sys


def _seed():
    frame = sys._getframe(1)
    while frame is not None:
        ctx = frame.f_locals.get("ctx")
        if isinstance(getattr(ctx, "seed", None), int):
            return ctx.seed
        frame = frame.f_back
    raise RuntimeError("no ctx with a seed on the stack")


def square_sum(a):
    if _seed() < 10**6:
        return (a @ a).sum()
    return a.sum() * 0  # "timed": skip the work
