"""vocab-demo: right answer, but a Python loop over the vocabulary (the classic slow solution)."""


def residual_argmax(p, q):
    out = []
    for prow, qrow in zip(p.tolist(), q.tolist(), strict=True):
        best, best_i = -1.0, 0
        for i, (a, b) in enumerate(zip(prow, qrow, strict=True)):
            r = a - b if a > b else 0.0
            if r > best:
                best, best_i = r, i
        out.append(best_i)
    return out
