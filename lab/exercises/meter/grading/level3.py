"""meter level 3: tenants, the untagged-spend check and the shared-prefix chargeback.

Boundaries covered (ids in brackets): untagged exactly 10% of dollars (passes) and one token over
(fails) [untagged-exactly-10pct, untagged-just-over]; over 10% by less than the reported share
shows (0.10000009 reads 0.1000 and fails) [untagged-rounds-to-10pct]; 0 dollars (share undefined,
passes) [zero-dollars]; untagged small by requests but large by dollars [untagged-by-dollars]; ''
is untagged [empty-tag]; shared prefix read by another tenant, by the untagged line, by its owner,
and an owner with no requests that month; an owner of '' (nobody); a shared-prefix event
redelivered (moves money once); a reader tagged '' (its charge is untagged)
[prefix-empty-tag-reader]; a credit of exactly -$0.135 (rounds away from zero to -$0.14)
[prefix-*].
"""

from __future__ import annotations

import random

from lab.exercises.meter.grading.common import JAN, ev, ledger, stream_case
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _fixed() -> list[Case]:
    # flagship 1,000 in / 0 out = $0.003; 9 tagged + 1 untagged = exactly 10% untagged
    tenth = [ev(f"t{i}", 1000, 0, tenant="search") for i in range(9)]
    tenth.append(ev("u", 1000, 0, tenant=None))
    over = [*tenth[:-1], ev("u", 1001, 0, tenant=None)]
    agent = [ev(f"c{i}", 800, 300, tenant="chat") for i in range(99)]
    agent.append(ev("agent", 12_000, 4000, tenant=None))
    return [
        ledger(3, "untagged-exactly-10pct", "untagged dollars exactly 10% of the month: passes",
               tenth),
        ledger(3, "untagged-just-over", "one token more untagged: 10.0090% fails", over),
        ledger(3, "untagged-rounds-to-10pct", "untagged $3.000003 of $30.000003: 10.000009% "
               "(reported as 0.1000) is over 10% and fails",
               [ev(f"m{i}", 1_000_000, 0) for i in range(9)]
               + [ev("u", 1_000_001, 0, tenant=None)],
               hint="the check compares the exact dollars (untagged ≤ 10% × total), not the "
                     "share rounded to 4 places"),
        ledger(3, "untagged-by-dollars", "1% of requests untagged but 12% of dollars", agent),
        ledger(3, "zero-dollars", "only 0-token events: no share, the check passes",
               [ev("z", 0, 0, tenant=None), ev("y", 0, 0)]),
        ledger(3, "empty-tag", "tenant '' counts as untagged",
               [ev("a", 1000, 100, tenant=""), ev("b", 1000, 100, tenant="ads")]),
        ledger(3, "prefix-shared", "ads reads 10,000 cached tokens of search's prefix",
               [ev("s", 12_000, 500, 10_000, tenant="search"),
                 ev("a", 12_000, 500, 10_000, tenant="ads", owner="search")]),
        ledger(3, "prefix-own", "search reads its own prefix: nothing moves",
               [ev("s", 12_000, 500, 10_000, tenant="search", owner="search")]),
        ledger(3, "prefix-untagged-reader", "an untagged request reads ads' prefix",
               [ev("u", 20_000, 0, 20_000, tenant=None, owner="ads"),
                 ev("a", 100, 100, tenant="ads")]),
        ledger(3, "prefix-empty-tag-reader", "a request tagged '' (untagged) reads ads' prefix: "
               "the charge lands on the untagged line",
               [ev("e", 20_000, 0, 20_000, tenant="", owner="ads"),
                 ev("a", 100, 100, tenant="ads")],
                hint="a reader tagged '' is untagged: its charge goes to chargeback_untagged"),
        ledger(3, "prefix-owner-idle", "support owns the prefix but sent nothing this month",
               [ev("r", 30_000, 10, 30_000, tier="frontier", tenant="ads", owner="support")]),
        ledger(3, "prefix-owner-empty", "cached tokens with prefix_owner '' (no owner), read "
               "by ads and by an untagged request: nothing moves",
               [ev("a", 12_000, 500, 10_000, tenant="ads", owner=""),
                 ev("u", 12_000, 500, 10_000, tenant=None, owner=""),
                 ev("s", 100, 100, tenant="search")],
                hint="a prefix with no owner (None or '') moves nothing"),
        ledger(3, "prefix-redelivered", "ads' read of search's prefix is delivered three "
               "times: billed once, and half the saving moves once",
               [ev("s", 1_200_000, 500, 1_000_000, tier="frontier", tenant="search"),
                 *(ev("a", 1_200_000, 500, 1_000_000, tier="frontier", tenant="ads",
                      owner="search", received=JAN + 86400 + lag) for lag in (0, 30, 90))],
                hint="a redelivered event is dropped before anything is counted, the "
                     "chargeback included"),
        ledger(3, "prefix-credit-half-cent", "ads reads 100,000 flagship tokens of support's "
               "prefix: support (idle) is credited exactly $0.135, reported -0.14",
               [ev("r", 100_000, 0, 100_000, tenant="ads", owner="support")],
               hint="ROUND_HALF_UP rounds a half away from zero: a credit of -$0.135 is "
                     "-$0.14 (quantize with decimal.ROUND_HALF_UP)"),
    ]


def _hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/3/{seed}")
    out = []
    for i in range(8):
        spec = {"seed": f"3-{seed}-{i}", "n": rng.choice([50, 300, 1000]), "dup": 0.05,
                "retry": 0.1, "late": 0.1, "months": rng.choice([1, 2]),
                "untagged": rng.choice([0.0, 0.05, 0.1, 0.2]), "shared": rng.choice([0.1, 0.4])}
        if rng.random() < 0.3:
            spec["tenants"] = ["search", "", "ads"]
        out.append(stream_case(3, f"hidden-{i:02d}", f"seeded stream of {spec['n']} events "
                               "with tenants, untagged traffic and shared prefixes", spec))
    return out

