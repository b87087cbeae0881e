"""Checks every rank-run case shares: each rank answered, as its own process, on the process group
it was handed; collective counts; tensors compared within fp32 tolerance with the bug named."""

from __future__ import annotations

from collections import Counter
from typing import Any

from lab.exercises.untouched import message

RTOL, ATOL = 1e-4, 1e-4  # fp32: sums in another order differ by ~1e-6 here


class Fail(Exception):
    """A failed check; the message is the verdict's."""


def ranks_ok(got: Any, world: int) -> list[dict[str, Any]]:
    """The ranks' results, or Fail naming the first rank that raised, hung or died, or ranks
    that were not separate processes."""
    if not isinstance(got, dict) or not isinstance(got.get("ranks"), list):
        raise Fail(f"expected one result per rank, got {str(got)[:200]}")
    ranks: list[dict[str, Any]] = got["ranks"]
    if len(ranks) != world:
        raise Fail(f"expected {world} rank results, got {len(ranks)}")
    hung = [r for r in ranks if r.get("error") and r["error"][0] == "Hung"]
    if hung:
        first = hung[0]
        phase = first.get("phase", "learner")
        if phase != "learner":
            raise Fail(f"rank {first['rank']} hung in the harness's {phase} (joining or leaving "
                       "the process group), before or after your code: not your bug. Grade "
                       "again; if it repeats on an idle machine, please report it")
        done = [r for r in ranks if not r.get("error")]
        calls = "; ".join(f"rank {r['rank']} called {_calls(r['log'])}" for r in done)
        if first.get("collectives") == 0 and not any(r.get("log") for r in done):
            raise Fail(f"rank {first['rank']} never finished, and no rank called a collective: "
                       "its own computation ran past the deadline (an endless loop, or far "
                       "too slow), not a collective the other ranks skipped")
        raise Fail(f"rank {hung[0]['rank']} never finished: a collective that not every rank "
                   f"calls (or calls in another order) waits forever"
                   + (f" ({calls})" if calls else ""))
    errors = [r for r in ranks if r.get("error")]
    _own_raise_first(errors)
    logs = {r["rank"]: _calls(r["log"]) for r in ranks if r.get("log") is not None}
    if errors and len(set(logs.values())) > 1:
        seen = "; ".join(f"rank {k} called {v}" for k, v in sorted(logs.items()))
        raise Fail(f"the ranks called different collectives ({seen}) and rank "
                   f"{errors[0]['rank']} failed in one ({errors[0]['error'][1][:120]}): every "
                   f"rank must call the same collectives in the same order")
    for r in ranks:
        if r.get("error"):
            kind, msg, where = [*r["error"], "", ""][:3]
            where = f" ({where})" if where else ""
            if kind == "NotImplementedError":
                raise Fail(f"not implemented yet on rank {r['rank']}{where}: {msg}")
            if "Timeout" in msg or "timed out" in msg.lower():
                raise Fail(f"rank {r['rank']} timed out in a collective{where}: the ranks did "
                           f"not call the same collectives in the same order ({msg[:200]})")
            raise Fail(f"rank {r['rank']} raised {kind}{where}: {msg}")
    pids = [r.get("pid") for r in ranks]
    if len(set(pids)) != world:
        raise Fail(f"the {world} ranks were not separate processes (pids {pids})")
    for r in ranks:
        touched = r.get("value", {}).get("touched") if isinstance(r.get("value"), dict) else None
        if touched:
            what, paths = touched[0]
            raise Fail(f"rank {r['rank']}: "
                       + message(what, paths, "x = x[..., a:b].clone(), list(tokens)"))
    for r in ranks:
        off = [c[0] for c in r["log"] if not c[1]]
        if off:
            raise Fail(f"rank {r['rank']} called {off[0]} on another process group (the "
                       f"default one?): pass group=group, the group your layer was handed")
    return ranks


def _own_raise_first(errors: list[dict[str, Any]]) -> None:
    """A rank whose own code raised (outside any collective: a constructor, a shape) is the
    cause; peers that then failed inside a collective, or died, were left waiting on it."""
    own = [r for r in errors if "failed_in" in r and r["failed_in"] is None
           and r["error"][0] not in ("Hung", "Died", "NotImplementedError")]
    waiting = [r for r in errors if r not in own]
    if not own or not waiting:
        return
    first = own[0]
    kind, msg, where = [*first["error"], "", ""][:3]
    where = f" ({where})" if where else ""
    peers = ", ".join(
        f"rank {r['rank']} " + (f"failed inside {r['failed_in']}" if r.get("failed_in")
                                else "died" if r["error"][0] == "Died" else "failed")
        for r in waiting)
    raise Fail(f"rank {first['rank']} raised {kind}{where}: {msg} — its own code raised, "
               f"outside any collective; then {peers}, waiting on the rank that had stopped")


def _calls(log: list[list[Any]] | None) -> str:
    if not log:
        return "no collective"
    counts = Counter(c[0] for c in log)
    return ", ".join(f"{name} x{n}" for name, n in sorted(counts.items()))


def counts(rank: dict[str, Any]) -> Counter[str]:
    return Counter(c[0] for c in rank["log"])


def expect_collectives(ranks: list[dict[str, Any]], world: int, want: dict[str, int],
                       what: str, why: str) -> None:
    """Every rank called exactly `want` (name -> count) and nothing else; at W = 1 a collective
    is a no-op, so calling it or not are both fine."""
    for r in ranks:
        got = counts(r)
        if world == 1:
            extra = {k: v for k, v in got.items() if k not in want}
            if not extra:
                continue
        if got != Counter(want):
            wanted = ", ".join(f"{k} x{v}" for k, v in want.items()) or "no collective"
            raise Fail(f"{what}: rank {r['rank']} called {_calls(r['log'])}; expected "
                       f"{wanted} — {why}")


def close(got: Any, want: Any, what: str, hint: str = "") -> None:
    """`got` equals `want` within fp32 tolerance, or Fail saying where and how far."""
    import torch

    if isinstance(got, dict) and "unexpected" in got:
        raise Fail(f"{what}: {got['unexpected']}")
    if not isinstance(got, torch.Tensor):
        raise Fail(f"{what}: expected a tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(want.shape):
        raise Fail(f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
                   + (f" — {hint}" if hint else ""))
    if not torch.allclose(got, want, rtol=RTOL, atol=ATOL):
        err = (got - want).abs()
        i = int(err.argmax())
        idx = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), want.shape))
        raise Fail(f"{what} differs from the single-process layer: at {list(idx)} expected "
                   f"{float(want.flatten()[i]):.5f}, got {float(got.flatten()[i]):.5f} (max "
                   f"error {float(err.max()):.3g})" + (f" — {hint}" if hint else ""))
