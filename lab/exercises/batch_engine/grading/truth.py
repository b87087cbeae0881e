"""The expected tokens of a target case, from the model's own forward.

The reference engine runs through the same step wrapper (`runtime.HFStepModel`) as the
learner's, so a wrapper bug (a sliding-window cache that loses its length, a mask that slides
over padding) would make both wrong the same way and grading would still pass. The ground truth
is therefore each request alone, decoded greedily by the model's own forward over its whole
sequence at every step: no cache, no padding, no wrapper (transformers' for a learner's own
checkpoint; for the shipped target, the torch-only Llama's forward in `lab.models.plain_llama`,
which shares no code with the wrapper's `LeanLlama` and equals transformers' logits
bit for bit: tests/models/test_plain_llama.py). It is part of the case's expected
value (`grading.expected`), so with a learner's own `--target` it is computed in the grader's
sandboxed models child, never in the grader's process; per step it also keeps the top-1/top-2
margin and the runner-up, which the near-tie excuse reads.
"""

from __future__ import annotations

from typing import Any

Solo = tuple[tuple[int, ...], str, tuple[float, ...], tuple[int, ...]]
Want = tuple[tuple[int, ...], int, tuple[int, ...], tuple[tuple[int, ...], ...]]
KEPT = 256  # solo decodings remembered per process (a grading asks for some twice)
ROWS = 8  # requests per forward (a learner's checkpoint may have a large vocabulary)
_SOLO: dict[tuple[str | None, Want], Solo] = {}


def solo_greedy(target: str | None, prompt: tuple[int, ...], max_tokens: int,
                stop_ids: tuple[int, ...], stop_seqs: tuple[tuple[int, ...], ...]) -> Solo:
    """(tokens, finish reason, top-1 minus top-2 logit per step, runner-up per step) of one
    request decoded alone: a stop token or sequence is included and checked before max_tokens;
    max_tokens 0 gives no token and "length"."""
    return solo_greedy_many(target, [(prompt, max_tokens, stop_ids, stop_seqs)])[0]


def solo_greedy_many(target: str | None, wants: list[Want],
                     hints: list[list[int]] | None = None) -> list[Solo]:
    """`solo_greedy` of each of `wants` (prompt, max_tokens, stop ids, stop sequences).
    `hints`: per want, the tokens it is likely to produce (the reference engine's): they only
    save forwards (`_decode_apart`), the result is the model's own whatever they hold."""
    hinted = dict(zip(wants, hints or [], strict=False))
    todo = [w for w in dict.fromkeys(wants) if (target, w) not in _SOLO]
    for w, solo in zip(todo, _decode_apart(target, todo, [hinted.get(w, []) for w in todo]),
                       strict=True):
        _SOLO[(target, w)] = solo
    out = [_SOLO[(target, w)] for w in wants]
    while len(_SOLO) > KEPT:
        del _SOLO[next(iter(_SOLO))]
    return out


def _decode_apart(target: str | None, wants: list[Want], hints: list[list[int]]) -> list[Solo]:
    """Greedy decoding of each request on its own by no-cache forwards over whole sequences.

    Each row is one request's sequence from position 0, right-padded, under a causal mask: no
    real token attends to another row or to the padding on its right. A row holds the prompt,
    the tokens decoded so far and the rest of its hint; one forward scores every position, and
    the hint's tokens are taken while they equal the argmax at the position before (a causal
    forward's logits there depend on the earlier tokens only, which are all decoded ones).
    At the first hint token that is not the argmax the argmax is taken instead and the row goes
    on one token per forward. A right hint costs one forward for all its tokens."""
    import torch

    from lab.exercises.batch_engine.runtime import load_target

    done: dict[int, Solo] = {i: ((), "length", (), ()) for i, w in enumerate(wants) if w[1] <= 0}
    live: dict[int, tuple[list[int], list[float], list[int], list[int]]] = {
        i: ([], [], [], list(hints[i])) for i in range(len(wants)) if i not in done}
    model = load_target("cpu", "float32", target).model
    while live:
        rows = list(live)[:ROWS]
        seqs = [[*wants[i][0], *live[i][0], *live[i][3]] for i in rows]
        width = max(len(s) for s in seqs)
        ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs], dtype=torch.long)
        with torch.inference_mode():
            logits = model(input_ids=ids, use_cache=False).logits
        for k, i in enumerate(rows):
            out, gaps, second, guess = live[i]
            base = len(wants[i][0]) + len(out) - 1  # its logits give the next token
            top = logits[k, base:base + len(guess) + 1].float().topk(2, dim=-1)
            live[i] = (out, gaps, second, [])
            for j in range(len(guess) + 1):
                t = int(top.indices[j, 0])
                out.append(t)
                gaps.append(float(top.values[j, 0] - top.values[j, 1]))
                second.append(int(top.indices[j, 1]))
                _, max_tokens, stop_ids, stop_seqs = wants[i]
                reason = ("stop" if t in stop_ids or any(s and tuple(out[-len(s):]) == s
                                                         for s in stop_seqs)
                          else "length" if len(out) >= max_tokens else "")
                if reason:
                    done[i] = (tuple(out), reason, tuple(gaps), tuple(second))
                    del live[i]
                    break
                if j == len(guess) or t != guess[j]:
                    break
    return [done[i] for i in range(len(wants))]


def solo_truths(run: dict[str, Any]) -> list[list[Any] | None]:
    """Per request of a target case's reference run (in the order the checks index them:
    by arrival time), its solo greedy decoding as [tokens, reason, gaps, runner-ups]; None for
    a request that has none (an empty prompt, a negative max_tokens)."""
    ordered = sorted(run["requests"], key=lambda r: r["t"])
    wants = [(tuple(r["prompt"]), r["max_tokens"], tuple(r.get("stop_ids", ())),
              tuple(tuple(s) for s in r.get("stop_seqs", ())))
             for r in ordered if r["max_tokens"] >= 0 and r["prompt"]]
    hints = [[e[3] for e in run["events"] if e[1] == "token" and e[2] == i]
             for i, r in enumerate(ordered) if r["max_tokens"] >= 0 and r["prompt"]]
    solos = iter(solo_greedy_many(run.get("target"), wants, hints))
    out: list[list[Any] | None] = []
    for r in ordered:
        solo = next(solos) if r["max_tokens"] >= 0 and r["prompt"] else None
        out.append(None if solo is None else [list(solo[0]), solo[1], list(solo[2]),
                                              list(solo[3])])
    return out
