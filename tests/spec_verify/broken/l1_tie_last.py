"""Broken on purpose (level 1): the grader must name this bug (see MESSAGE)."""

LEVEL = 1
MESSAGE = "lowest tied id"


def verify_greedy(draft_tokens, target_logits):
    """Bug: with tied top logits it takes the LAST tied id as the argmax (a sort, not argmax)."""
    out = []
    rows = target_logits.tolist()

    def best(i):
        row = rows[i]
        return sorted(range(len(row)), key=lambda j: row[j])[-1]

    for i, x in enumerate(draft_tokens):
        if x != best(i):
            return [*out, best(i)]
        out.append(x)
    return [*out, best(len(draft_tokens))]
