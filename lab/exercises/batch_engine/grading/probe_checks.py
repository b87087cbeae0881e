"""What the probe's raw call record says about an engine's inputs (parent side).

For every call and row: which request the row is (its marker: the first prompt token of the
sequence it attends to), how many real tokens it feeds and how many KV tokens it holds after the
call; and every malformed input, as a message that names the mistake: no attention mask, right
padding, a mask of 1 on a padding id, positions that are not the row's own, a refilled slot that
still attends to its previous occupant's columns (stale KV), cached columns out of order.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.batch_engine.probe import FIRST_ID
from questions.wording import plural

MAX_VIOLATIONS = 20
Row = tuple[int, int, int]  # (marker, new real tokens, KV tokens held after the call)
Call = tuple[float, int, list[Row], int]  # (time, width, rows, step)


def summarize(raw: list[dict[str, Any]], zero_ok: bool = False,
              markers: set[int] | None = None) -> tuple[list[Call], list[str]]:
    """The calls as (time, width, rows, step), and the malformed inputs found (first 20).
    `zero_ok`: the case makes the probe emit id 0 as a real token, so a fed 0 is no padding.
    `markers`: the requests' first prompt tokens; a row that restarts at position 0 is a new
    request in a stale slot only if it feeds another request's marker (one no earlier call
    started, or a recomputed request's prompt and tokens); otherwise the row continues its own
    sequence with its positions restarted. Whatever its positions, a row that feeds again the
    first tokens of the sequence it attends to (two or more, from its marker) is a recomputed
    request in its own stale row."""
    calls: list[Call] = []
    found: list[str] = []
    started: set[int] = set()  # markers of the sequences earlier calls ran

    def flag(message: str) -> None:
        if len(found) < MAX_VIOLATIONS and message not in found:
            found.append(message)

    for n, c in enumerate(raw):
        ids, pos, mask = c["ids"].tolist(), c["positions"].tolist(), c["mask"].tolist()
        cache_pos, cache_mark = c["cache_pos"].tolist(), c["cache_mark"].tolist()
        cache_tok = c["cache_tok"].tolist()
        b, t = len(ids), len(ids[0]) if ids else 0
        past = len(mask[0]) - t if mask else 0
        if not c["mask_given"] and b > 1:
            flag(f"call {n}: attention_mask is None for a batch of {b} rows — without a mask "
                 "every row attends to the padding and to cache columns that are not its own")
        rows: list[Row] = []
        for r in range(b):
            m_past, m_new = mask[r][:past], mask[r][past:]
            if 1 in m_new and 0 in m_new[m_new.index(1):]:
                flag(_masked_after_real(n, r, m_new, ids[r]))
            attended = [j for j in range(past) if m_past[j]]
            seen = [cache_pos[r][j] for j in attended]
            if seen != list(range(len(seen))):
                owners = sorted({cache_mark[r][j] for j in attended})
                detail = (f"columns of {len(owners)} different requests" if len(owners) > 1
                          else "columns out of order")
                flag(f"call {n}, row {r}: the cached columns this row attends to are not one "
                     f"sequence (positions {_short(seen)}; {detail}) — stale KV: a refilled "
                     "slot must mask out its previous occupant's columns")
            marker = cache_mark[r][attended[-1]] if attended else -1
            got_pos = [pos[r][j] for j in range(t) if m_new[j]]
            real = [ids[r][j] for j in range(t) if m_new[j]]
            if real and marker < 0:
                marker = real[0]
            low = [tok for tok in real if tok < FIRST_ID and not (zero_ok and tok == 0)]
            if low:
                tok = low[0]
                flag(f"call {n}, row {r}: attention_mask is 1 on a padding token (id {tok}) — "
                     "the mask must be 0 on padding, or the row attends to it as if it were text")
            want_pos = list(range(len(attended), len(attended) + len(real)))
            # a row fed from position 0 over cached columns: a new (or recomputed) request's
            # prompt in a slot whose old columns it still attends to (stale KV), or the row's
            # own sequence with its positions restarted: a prompt starts with another request's
            # marker, and a recomputed one feeds its prompt plus its tokens (more than one)
            other = bool(real) and real[0] in (markers or ()) and real[0] != marker and (
                len(real) > 1 or real[0] not in started)
            own_sequence = seen == list(range(len(seen)))
            held = [cache_tok[r][j] for j in attended]
            if (len(real) > 1 and attended and own_sequence and real[0] == marker
                    and real == held[:len(real)]):
                # it feeds again the first tokens its row holds: a recompute over its old KV
                flag(f"call {n}, row {r}: a request recomputed from its prompt (it feeds its "
                     f"first {len(real)} tokens again, at positions {_short(got_pos)}) in a row "
                     f"that still attends to its own {len(attended)} old cached columns, "
                     "which hold those tokens already — a preempted request gives up its row: "
                     "drop the row (or zero its whole mask row) when preempting it, and "
                     "recompute it later in an empty row")
            elif (got_pos and got_pos[0] == 0 and attended and markers is not None and not other
                    and own_sequence):
                flag(f"call {n}, row {r}: position_ids restart at 0 ({_short(got_pos)}) for a "
                     f"row that continues its own sequence (it attends to its {len(attended)} "
                     f"cached tokens, positions 0..{len(attended) - 1}, and feeds no new "
                     f"request's prompt): expected {_short(want_pos)} — positions continue from "
                     "each row's cached length (the full mask's cumsum - 1), also at a step "
                     "where another request joins the batch")
            elif got_pos and got_pos[0] == 0 and attended:
                flag(f"call {n}, row {r}: a new sequence (positions from 0) attends to "
                     f"{len(attended)} cached columns of another request — stale KV: a refilled "
                     "slot must mask out its previous occupant's columns (or drop the row and "
                     "add a fresh one)")
            elif got_pos != want_pos:
                flag(f"call {n}, row {r}: position_ids {got_pos} for its new tokens, expected "
                     f"{want_pos} — positions count each row's own real tokens "
                     "(attention_mask.cumsum(-1) - 1), not columns of the padded batch")
            rows.append((marker, len(real), len(attended) + len(real)))
            started.add(marker)
        calls.append((float(c["t"]), t, rows, int(c["step"])))
    return calls, found


def _masked_after_real(n: int, r: int, m_new: list[int], ids: list[int]) -> str:
    """A 0 in the mask to the right of a 1. Right padding is real tokens first, then padding
    (1…1 0…0); any other shape (a hole, or padding on both sides) is a mask that marks padding
    by token id, which masks out a real token equal to the pad id."""
    first = m_new.index(1)
    hole = [j for j in range(first, len(m_new)) if not m_new[j]]
    if first == 0 and all(not m_new[j] for j in range(hole[0], len(m_new))):
        return (f"call {n}, row {r}: padding to the right of a real token (mask {m_new}) — "
                "pad on the left so every row's newest token is in the last column")
    shown = sorted({ids[j] for j in hole})
    return (f"call {n}, row {r}: attention_mask is 0 on {plural(len(hole), 'real token')} "
            f"(id {', '.join(map(str, shown))} at column {', '.join(map(str, hole[:4]))}, "
            f"after the row's first real token; mask {m_new}) — the mask must mark padding by "
            "each row's length, not by token id: `input_ids != pad_id` also masks a real token "
            "equal to the pad id (0 is an ordinary id)")


def _short(values: list[int], limit: int = 12) -> str:
    if len(values) <= limit:
        return str(values)
    return str(values[: limit // 2])[:-1] + ", …, " + str(values[-limit // 2:])[1:]
