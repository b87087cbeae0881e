"""Judging a BlockManager trace (levels 1-3 and the level-4 memory workload).

The grader keeps its own account of the learner's trace (`_View`): which tokens each live
sequence holds, what every block slot holds (the token and a key of the whole prefix before it,
written by allocate for the positions that were not cache hits and by append_slot at the slot
it returned, copied by a copy-on-write), the reference counts implied by the live tables, and
when each block was last released. After every operation it checks, independently of the
reference:
- the call raised exactly when the reference did (OutOfBlocks by name), and a call that raised
  changed nothing;
- returned values are well formed: cached tokens are whole blocks, append_slot's offset is the new
  token's position modulo block_size, its block is the table's last, a copy is (old last, new last);
- copy-on-write happens exactly when a shared, partly filled last block is written;
- every table has ceil(tokens / block_size) blocks and num_free() = blocks in no live table;
- every token of every live sequence is still where its table says (a block handed out while
  still in a table, a write into a shared block, a hit on a block holding another prefix, and a
  slot off by one all show here, with who overwrote it).
Then it compares the trace exactly with the reference's (hits, tables, free counts); the first
difference is explained from the view: lowest empty block first, evict only when none is empty,
least recently released first, reuse the longest cached prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.grader.api import Verdict
from questions.wording import noun, plural


class Fail(Exception):
    pass


def describe(op: list[Any], lens: dict[int, int] | None = None) -> str:
    name = op[0]
    if name == "allocate":
        return f"allocate(seq {op[1]}, {len(op[2])} tokens)"
    if name == "append":
        n = (lens or {}).get(op[1])
        return f"append_slot(seq {op[1]}, token {op[2]})" + (
            f" [seq {op[1]} held {n} tokens]" if n is not None else "")
    if name == "fork":
        return f"fork(parent {op[1]}, child {op[2]})"
    if name == "free":
        return f"free(seq {op[1]})"
    if name == "can_allocate":
        return f"can_allocate({len(op[1])} tokens)"
    return repr(op)


@dataclass
class _Slot:
    key: int  # hash of the whole prefix up to and including this token
    token: int
    seq: int
    op: int


@dataclass
class _View:
    num_blocks: int
    bs: int
    caching: bool
    tokens: dict[int, list[int]] = field(default_factory=dict)
    keys: dict[int, list[int]] = field(default_factory=dict)
    tables: dict[int, list[int]] = field(default_factory=dict)
    content: dict[int, list[_Slot | None]] = field(default_factory=dict)
    released: dict[int, tuple[int, int]] = field(default_factory=dict)
    filled_by: dict[int, tuple[str, int]] = field(default_factory=dict)  # block -> (call, op)
    filler: dict[int, int] = field(default_factory=dict)  # block -> the seq that filled it
    forked: dict[int, int] = field(default_factory=dict)  # seq -> op of a fork it took part in

    def refs(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for table in self.tables.values():
            for b in table:
                out[b] = out.get(b, 0) + 1
        return out

    def holders(self, block: int) -> list[int]:
        return sorted(s for s, t in self.tables.items() if block in t)

    def status(self, block: int, refs: dict[int, int]) -> str:
        """'used', 'cached' (free, holding a full block) or 'empty'."""
        if refs.get(block):
            return "used"
        slots = self.content.get(block)
        if self.caching and slots and all(s is not None for s in slots):
            return "cached"
        return "empty"

    def write(self, block: int, offset: int, seq: int, pos: int, op: int) -> None:
        slots = self.content.setdefault(block, [None] * self.bs)
        slots[offset] = _Slot(self.keys[seq][pos], self.tokens[seq][pos], seq, op)

    def set_tokens(self, seq: int, tokens: list[int]) -> None:
        self.tokens[seq] = list(tokens)
        keys, h = [], 0
        for t in tokens:
            h = hash((h, t))
            keys.append(h)
        self.keys[seq] = keys

    def push(self, seq: int, token: int) -> None:
        prev = self.keys[seq][-1] if self.keys[seq] else 0
        self.tokens[seq].append(token)
        self.keys[seq].append(hash((prev, token)))


def _blocks(n: int, bs: int) -> int:
    return -(-n // bs)


def check_trace(params: dict[str, Any], got: Any, expected: Any) -> Verdict:
    try:
        _shape(params, got)
        summary = _walk(params, got, expected)
    except Fail as exc:
        return Verdict(False, str(exc))
    return Verdict(True, summary)


def _shape(params: dict[str, Any], got: Any) -> None:
    n = len(params["ops"])
    if not isinstance(got, dict) or any(len(got.get(k, [])) != n
                                        for k in ("results", "raised", "free")):
        raise Fail("internal: the trace did not come back whole (one result per operation)")


def _walk(p: dict[str, Any], got: dict[str, Any], exp: dict[str, Any]) -> str:
    bs, nb, ops = p["block_size"], p["num_blocks"], p["ops"]
    full = p.get("record", "full") == "full"
    seqs = p["seqs"] if full else []
    col = {s: k for k, s in enumerate(seqs)}
    view = _View(nb, bs, bool(p.get("caching")))
    lens: dict[int, int] = {}  # tokens per live sequence (the reference's account)
    prev_free = nb
    prev_tables: list[Any] = [None] * len(seqs)
    hits = prompt_tokens = 0
    for i, op in enumerate(ops):
        where = f"op {i}: {describe(op, lens)}"
        g_raised, e_raised = got["raised"][i], exp["raised"][i]
        g_res, e_res = got["results"][i], exp["results"][i]
        g_free = got["free"][i]
        g_tables = got["tables"][i] if full else []
        _check_raised(where, op, g_raised, e_raised, e_res, g_res, prev_free, bs, lens, view)
        if g_raised:
            if g_free != prev_free or (full and g_tables != prev_tables):
                raise Fail(f"{where} raised {g_raised[0]} but changed the manager: "
                           f"{_state_diff(seqs, prev_tables, g_tables, prev_free, g_free)} — a "
                           "call that fails must change nothing (check before you take blocks)")
            continue
        if not isinstance(g_free, int) or isinstance(g_free, bool):
            raise Fail(f"{where}: num_free() returned {g_free!r}, not an int")
        before = _snapshot(view) if full else None
        if full:
            assert before is not None
            _apply(where, i, op, g_res, g_tables, col, view, before)
            _invariants(where, i, op, g_free, view)
        _compare(where, op, g_res, e_res, g_free, exp["free"][i], g_tables,
                 exp["tables"][i] if full else [], seqs, before, view, lens)
        _track_lens(op, lens)
        if op[0] == "allocate":
            hits += e_res or 0
            prompt_tokens += len(op[2])
        prev_free, prev_tables = g_free, g_tables
    return _summary(p, hits, prompt_tokens, exp)


def _summary(p: dict[str, Any], hits: int, prompt_tokens: int, exp: dict[str, Any]) -> str:
    if p.get("report") == "cache" and prompt_tokens:
        bs = p["block_size"]
        return (f"prefix cache: {hits:,} of {prompt_tokens:,} prompt tokens were hits "
                f"({hits / prompt_tokens:.0%} hit rate), {hits // bs:,} blocks of {bs} tokens "
                "not recomputed and not stored twice")
    if p.get("report") == "memory":
        peak = p["num_blocks"] - min(exp["free"])
        reserve, n, avg = p["reserve_tokens"], p["requests"], p["mean_tokens"]
        paged, contiguous = peak * p["block_size"], reserve * n
        return (f"{n} requests averaging {avg:.0f} tokens: paged KV peaked at {peak:,} blocks "
                f"of {p['block_size']} = {paged:,} token slots, vs {contiguous:,} reserved "
                f"contiguously at max_tokens {reserve:,} each — {paged / contiguous:.1%} of the "
                f"memory ({contiguous / max(paged, 1):.1f}x less)")
    return ""


def _track_lens(op: list[Any], lens: dict[int, int]) -> None:
    """Token counts per sequence as the reference saw them (only used for messages)."""
    if op[0] == "allocate":
        lens.setdefault(op[1], len(op[2]))
    elif op[0] == "append" and op[1] in lens:
        lens[op[1]] += 1
    elif op[0] == "fork" and op[1] in lens:
        lens.setdefault(op[2], lens[op[1]])
    elif op[0] == "free":
        lens.pop(op[1], None)


def _state_diff(seqs: list[int], before: list[Any], after: list[Any], f0: int, f1: Any) -> str:
    parts = []
    if f0 != f1:
        parts.append(f"num_free() {f0} -> {f1}")
    for s, a, b in zip(seqs, before, after, strict=False):
        if a != b:
            parts.append(f"seq {s}'s table {a} -> {b}")
    return "; ".join(parts[:3]) or "no visible change"


def _check_raised(where: str, op: list[Any], g: Any, e: Any, e_res: Any, g_res: Any,
                  free: int, bs: int, lens: dict[int, int], view: _View) -> None:
    if e and not g:
        if e[0] == "OutOfBlocks":
            need = (_blocks(len(op[2]), bs) if op[0] == "allocate" else 1)
            raise Fail(f"{where} should raise OutOfBlocks — it needs "
                       f"{plural(need, 'new block')} and "
                       f"only {free} {noun(free, 'is', 'are')} free — but it returned "
                       f"{g_res!r}: when blocks run out, "
                       "raise OutOfBlocks and change nothing, never hand out a block that is "
                       "still in use (a silent overwrite corrupts another sequence's KV)")
        raise Fail(f"{where} should raise {e[0]} ({e[1]}), but it returned {g_res!r}")
    if g and not e:
        hint = ""
        if g[0] == "OutOfBlocks":
            hint = (f" — {plural(free, 'block')} {noun(free, 'was', 'were')} free"
                    + (" (count blocks shared by a fork or reused from the cache once)"
                       if op[0] in ("allocate", "can_allocate", "fork") else ""))
        raise Fail(f"{where} raised {g[0]}({g[1]!r}), but the call is valid here (expected "
                   f"{e_res!r}){hint}")
    if g and e and g[0] != e[0]:
        if e[0] == "OutOfBlocks":
            raise Fail(f"{where} raised {g[0]}({g[1]!r}); out of blocks must raise the specific "
                       "exception OutOfBlocks (define `class OutOfBlocks(Exception)` in your "
                       "module and raise it before changing anything)")
        raise Fail(f"{where} raised {g[0]}({g[1]!r}), expected {e[0]} ({e[1]})")


@dataclass
class _Snap:
    refs: dict[int, int]
    tables: dict[int, list[int]]
    status: dict[int, str]
    released: dict[int, tuple[int, int]]
    filled_by: dict[int, tuple[str, int]] = field(default_factory=dict)


def _snapshot(view: _View) -> _Snap:
    refs = view.refs()
    return _Snap(refs, {s: list(t) for s, t in view.tables.items()},
                 {b: view.status(b, refs) for b in range(view.num_blocks)}, dict(view.released),
                 dict(view.filled_by))


def _appended_full(block: int, filled_by: dict[int, tuple[str, int]]) -> str:
    """A hint when `block` became full by an append_slot (registered then, by the contract)."""
    how = filled_by.get(block)
    if how is None or how[0] != "append_slot":
        return ""
    return (f"block {block} became full by the append_slot at op {how[1]}, and a block is "
            "registered (hashed and cached) when it becomes full, by allocate or by the "
            "append_slot that fills it — ")


def _table_of(tables: list[Any], col: dict[int, int], seq: int, where: str) -> list[int]:
    t = tables[col[seq]] if seq in col else None
    if not isinstance(t, list) or any(not isinstance(b, int) or isinstance(b, bool) for b in t):
        raise Fail(f"{where}: block_table({seq}) returned {t!r}; expected a list of block ids "
                   f"(sequence {seq} is live)"
                   + (" — sequence ids are any ints, negative ones included: key tables by id "
                      "(a dict), not by list position" if seq < 0 else ""))
    return t


def _apply(where: str, i: int, op: list[Any], res: Any, tables: list[Any], col: dict[int, int],
           view: _View, before: _Snap) -> None:
    """Update the view with one successful operation (as the manager reported it)."""
    name, bs = op[0], view.bs
    if name == "allocate":
        seq, toks = op[1], list(op[2])
        if not isinstance(res, int) or isinstance(res, bool):
            raise Fail(f"{where} returned {res!r}; allocate returns the number of leading "
                       "tokens that were cache hits (an int; 0 without prefix caching)")
        if not view.caching and res != 0:
            raise Fail(f"{where} returned {res} cached tokens with prefix caching off (expected 0)")
        if res < 0 or res > len(toks) or res % bs:
            raise Fail(f"{where} returned {res} cached tokens: hits are whole full blocks of "
                       f"{bs} tokens (at most the prompt's {len(toks)}); a partly filled block "
                       "is never shared")
        view.set_tokens(seq, toks)
        table = _table_of(tables, col, seq, where)
        view.tables[seq] = table
        _check_len(where, seq, table, len(toks), bs, view)
        for pos in range(res):
            _check_hit(where, seq, pos, table, view)
        for pos in range(res, len(toks)):
            view.write(table[pos // bs], pos % bs, seq, pos, i)
            if pos % bs == bs - 1:
                view.filled_by[table[pos // bs]] = ("allocate", i)
    elif name == "append":
        seq, token = op[1], op[2]
        n = len(view.tokens[seq])
        if (not isinstance(res, list) or len(res) != 3 or
                any(not isinstance(x, int) or isinstance(x, bool) for x in res[:2]) or
                not (res[2] is None or (isinstance(res[2], list) and len(res[2]) == 2))):
            raise Fail(f"{where} returned {res!r}; append_slot returns (block, offset, copy) "
                       "with copy = None or (src, dst)")
        block, offset, cow = res
        old = before.tables[seq]
        view.push(seq, token)
        table = _table_of(tables, col, seq, where)
        view.tables[seq] = table
        if offset != n % bs:
            raise Fail(f"{where} returned offset {offset}; the new token is position {n}, so it "
                       f"goes at offset {n} % {bs} = {n % bs} of the table's block {n // bs} — "
                       "off by one at a block boundary?")
        if (cow is not None and n % bs and len(table) == len(old) + 1
                and table[:len(old)] == old):
            raise Fail(f"{where} returned copy {tuple(cow)} and appended block {table[-1]} to "
                       f"the table {table}: the copy replaces the shared last block in place "
                       f"(table[-1] = new block), so the table keeps {len(old)} blocks — the "
                       "token goes into the copy, not into a block after it")
        _check_len(where, seq, table, n + 1, bs, view)
        if table[-1] != block:
            raise Fail(f"{where} returned block {block}, but the table's last block is "
                       f"{table[-1]} (table {table})")
        shared_partial = n % bs != 0 and before.refs.get(old[-1], 0) > 1
        if cow is not None:
            if n % bs == 0:
                raise Fail(f"{where} returned a copy {tuple(cow)}, but the last block was full: "
                           "the new token starts a fresh block, so nothing is copied — copy only "
                           "a shared, partly filled last block")
            if not shared_partial:
                raise Fail(f"{where} returned a copy {tuple(cow)} of block {old[-1]}, which no "
                           f"other live sequence holds (reference count 1): write in place — "
                           "is a reference count not decremented on free or on an earlier copy?")
            if cow != [old[-1], block]:
                raise Fail(f"{where} returned copy {tuple(cow)}; expected (old last block "
                           f"{old[-1]}, new last block {block})")
            view.content[block] = list(view.content.get(old[-1], [None] * bs))
        elif shared_partial:
            sharers = [s for s in before.tables if s != seq and old[-1] in before.tables[s]]
            raise Fail(f"{where} wrote into block {old[-1]}, which {_holders(sharers)}"
                       " also hold: the first append into a shared, partly filled last block "
                       "must copy it (copy-on-write) and return (src, dst)")
        if n % bs == 0 and block in old:
            raise Fail(f"{where} returned block {block}, which is already in seq {seq}'s table")
        view.write(block, offset, seq, n, i)
        if offset == bs - 1:
            view.filled_by[block] = ("append_slot", i)
            view.filler[block] = seq
    elif name == "fork":
        parent, child = op[1], op[2]
        view.set_tokens(child, view.tokens[parent])
        table = _table_of(tables, col, child, where)
        if table != view.tables[parent]:
            raise Fail(f"{where}: the child's table {table} differs from the parent's "
                       f"{view.tables[parent]} — a fork shares every block of the parent")
        view.tables[child] = table
        view.forked.setdefault(parent, i)
        view.forked.setdefault(child, i)
    elif name == "free":
        seq = op[1]
        old = view.tables.pop(seq)
        del view.tokens[seq], view.keys[seq]
        refs = view.refs()
        for k, b in enumerate(reversed(old)):
            if not refs.get(b):
                view.released[b] = (i, k)
        if tables and seq in col and tables[col[seq]] is not None:
            raise Fail(f"{where}: block_table({seq}) still returns {tables[col[seq]]} after the "
                       "sequence was freed (expected ValueError for an unknown sequence)")
    # every live table as reported after this call (a call must not move other tables)
    for s in list(view.tables):
        t = _table_of(tables, col, s, where)
        if t != view.tables[s]:
            raise Fail(f"{where} changed seq {s}'s table from {view.tables[s]} to {t}")


def _check_len(where: str, seq: int, table: list[int], n: int, bs: int, view: _View) -> None:
    if len(table) != _blocks(n, bs):
        raise Fail(f"{where}: seq {seq} holds {n} tokens, so its table needs ceil({n} / {bs}) = "
                   f"{plural(_blocks(n, bs), 'block')}, but it has {len(table)}: {table}"
                   + (" — off by one at a block boundary?" if abs(len(table) - _blocks(n, bs))
                      == 1 else ""))
    bad = [b for b in table if not 0 <= b < view.num_blocks]
    if bad:
        raise Fail(f"{where}: seq {seq}'s table {table} has {noun(len(bad), 'block id')} {bad} "
                   f"outside "
                   f"0..{view.num_blocks - 1}")


def _check_hit(where: str, seq: int, pos: int, table: list[int], view: _View) -> None:
    bs = view.bs
    block, off = table[pos // bs], pos % bs
    slot = (view.content.get(block) or [None] * bs)[off]
    want_key, want_tok = view.keys[seq][pos], view.tokens[seq][pos]
    if slot is not None and slot.key == want_key:
        return
    first = (pos // bs) * bs
    if slot is None:
        raise Fail(f"{where} reported position {pos} as a cache hit in block {block}, but "
                   "nothing was ever written there")
    own = view.tokens[seq][first:first + bs]
    theirs = [s.token if s else None for s in view.content[block]]
    if own == theirs:
        raise Fail(f"{where} reused block {block} for tokens {pos // bs * bs}..{first + bs - 1}: "
                   f"same {bs} tokens {own}, but written by seq {slot.seq} after a different "
                   "prefix — a block's KV depends on every token before it: chain the hash over "
                   "the parent block's hash and the block's tokens")
    raise Fail(f"{where} reused block {block} as a cache hit for position {pos} (token "
               f"{want_tok}), but it holds token {slot.token} of seq {slot.seq} (written at op "
               f"{slot.op}) — a hit must hold exactly this prefix")


def _invariants(where: str, i: int, op: list[Any], free: int, view: _View) -> None:
    used = set(view.refs())
    if free != view.num_blocks - len(used):
        unused = view.num_blocks - len(used)
        if free > unused and view.caching and op[0] == "allocate":
            raise Fail(f"{where}: num_free() = {free}, but {len(used)} of the {view.num_blocks} "
                       f"blocks are in live tables, so only {unused} are free — a cached block "
                       "reused as a hit still counts as free: take it off the free (evictable) "
                       "list, or it will be evicted while in use")
        if free > unused:
            raise Fail(f"{where}: num_free() = {free}, but {len(used)} of the {view.num_blocks} "
                       f"blocks are in live tables, so only {unused} are free — a block counted "
                       "free while still in a table (freed too early, or a refcount that "
                       "dropped to 0 while another sequence shares the block)?")
        raise Fail(f"{where}: num_free() = {free}, but only {len(used)} of the "
                   f"{view.num_blocks} blocks are in live tables, so {unused} are free — blocks "
                   "never released: a reference count not decremented on free?")
    bs = view.bs
    for seq, table in view.tables.items():
        for pos, key in enumerate(view.keys[seq]):
            block, off = table[pos // bs], pos % bs
            slot = (view.content.get(block) or [None] * bs)[off]
            if slot is not None and slot.key == key:
                continue
            if slot is None:
                raise Fail(f"{where}: seq {seq}'s token at position {pos} should be in (block "
                           f"{block}, offset {off}), but nothing was written there")
            cause = ("a block still in a table was handed out again (freed too early, evicted "
                     "while in use, or reused silently when blocks ran out)")
            if slot.seq in view.tables and block in view.tables.get(slot.seq, []) and \
                    slot.seq != seq:
                cause = (f"seq {slot.seq} shares block {block} and wrote into it — the first "
                         "append into a shared block must copy it (copy-on-write)")
            raise Fail(f"{where}: seq {seq}'s token at position {pos} lives in (block {block}, "
                       f"offset {off}), but op {slot.op} wrote seq {slot.seq}'s token "
                       f"{slot.token} there: {cause}")


def _compare(where: str, op: list[Any], g_res: Any, e_res: Any, g_free: int, e_free: int,
             g_tables: list[Any], e_tables: list[Any], seqs: list[int], before: _Snap | None,
             view: _View, lens: dict[int, int]) -> None:
    """Exact agreement with the reference; the first difference explained from the view."""
    name = op[0]
    if name == "can_allocate" and g_res != e_res:
        raise Fail(f"{where} returned {g_res!r}, expected {e_res!r}: it succeeds when the "
                   "blocks it needs beyond the cached prefix fit in num_free() (a cached block "
                   "it reuses that is itself free does not count twice)")
    if name == "allocate" and g_res != e_res:
        if isinstance(g_res, int) and isinstance(e_res, int) and g_res < e_res:
            k = seqs.index(op[1]) if op[1] in seqs else -1
            table = e_tables[k] if k >= 0 and e_tables[k] else []
            missed = table[g_res // view.bs] if 0 <= g_res // view.bs < len(table) else -1
            hint = _appended_full(missed, before.filled_by) if before else ""
            seq = view.filler.get(missed, -1)
            fork_at = view.forked.get(seq, -1)
            if hint and before and 0 <= fork_at < before.filled_by[missed][1]:
                hint = (f"block {missed} was filled by seq {seq} after the fork at op {fork_at}, "
                        "and each sequence's hash chain is its own after a fork (a chain shared "
                        "with the other side lets its blocks change this one's hashes) — ")
            raise Fail(f"{where} reused {g_res} cached tokens, expected {e_res}: "
                       + (hint[0].upper() + hint[1:] if hint else "") + "the first "
                       f"{plural(e_res // view.bs, 'full block')} of this prompt "
                       f"{noun(e_res // view.bs, 'is', 'are')} cached (freed "
                       "blocks stay cached until evicted) — walk the prompt's full blocks, "
                       "chaining each block's hash over its parent's, and reuse the longest "
                       "cached prefix")
        raise Fail(f"{where} reused {g_res} cached tokens, expected {e_res}: no block of this "
                   "prefix beyond that is cached any more (evicted, or never cached)")
    for k, seq in enumerate(seqs):
        g, e = g_tables[k], e_tables[k]
        if e is None or g == e:
            continue
        for idx, (x, y) in enumerate(zip(g, e, strict=False)):
            if x != y:
                if name == "allocate" and seq == op[1] and idx < (e_res or 0) // view.bs:
                    raise Fail(f"{where}: seq {seq}'s table is {g}, expected {e} — block {x} "
                               f"holds this prefix too, but block {y} was cached under that "
                               "hash first: a block that fills with a hash already cached is "
                               "not registered again (the first one stays the block hits "
                               "reuse)")
                raise Fail(f"{where}: seq {seq}'s table is {g}, expected {e} — " +
                           (_choice(x, y, before) if before else ""))
        raise Fail(f"{where}: seq {seq}'s table is {g}, expected {e}")
    if name == "append" and g_res != e_res:
        raise Fail(f"{where} returned {g_res}, expected {e_res}")
    if g_free != e_free:
        raise Fail(f"{where}: num_free() = {g_free}, expected {e_free}")


def _choice(x: int, y: int, before: _Snap) -> str:
    """Why block y (the reference's choice) and not x."""
    sx, sy = before.status.get(x, "empty"), before.status.get(y, "empty")
    if sx == "used":
        holders = sorted(s for s, t in before.tables.items() if x in t)
        return (f"block {x} was still held by {_holders(holders)}: evicting or reusing a block "
                "that is in use corrupts its KV")
    if sx == "cached" and sy == "empty":
        how = before.filled_by.get(x, ("", 0))
        unregistered = (f" (or never cached it: block {x} became full by the append_slot at op "
                        f"{how[1]}, and a block is registered when it becomes full, by allocate "
                        "or by the append_slot that fills it)" if how[0] == "append_slot" else "")
        return (f"you evicted cached block {x} while block {y} was empty{unregistered}: a freed "
                "full block stays cached, and is evicted only when no empty block is left")
    if sx == "cached" and sy == "cached":
        rx, ry = before.released.get(x, (-1, 0)), before.released.get(y, (-1, 0))
        if rx[0] == ry[0]:
            return (f"you evicted block {x} before block {y}, both released by the free at op "
                    f"{rx[0]}: free releases a table from its last block to its first, so block "
                    f"{y} (nearer the tail) is the least recently used and goes first")
        if rx > ry:
            return (f"you evicted block {x} (released at op {rx[0]}) before block {y} (released "
                    f"at op {ry[0]}, earlier): evict the least recently used first — and free "
                    "releases a table from its last block to its first")
        return f"evict block {y} (the least recently used cached block) first"
    if sx == "empty" and sy == "empty":
        return (f"you took block {x}, but the lowest-numbered empty block was {y} (hand out the "
                "lowest-numbered empty block: the grader compares tables exactly)")
    if sx == "empty" and sy == "cached":
        return (f"you took block {x}, but block {y} was the block to use here")
    return f"block {y} was expected where you used block {x}"


def _holders(seqs: list[int]) -> str:
    """'seq 3' or 'seqs [3, 5]' for a message."""
    return f"seq {seqs[0]}" if len(seqs) == 1 else f"seqs {seqs}"
