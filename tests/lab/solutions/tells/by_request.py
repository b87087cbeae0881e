"""timed-demo, hostile: reads the request being answered from its callers' locals (the child's
`msg`) and skips the work unless it is the graded call (`run`). It can tell; every timed output
is checked, so it fails while timing."""

import sys


def _op():
    frame = sys._getframe(1)
    while frame is not None:
        msg = frame.f_locals.get("msg")
        if isinstance(msg, dict) and "op" in msg:
            return msg["op"]
        frame = frame.f_back
    raise RuntimeError("no request on the stack")


def square_sum(a):
    if _op() == "run":
        return (a @ a).sum()
    return a.sum() * 0
