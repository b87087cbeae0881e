"""meter level 2: retries billed in full and reported, redeliveries dropped, months by event time.

Boundaries covered (ids in brackets): a retry billed in full [retry-full-price]; 20% of requests
retried once (+20%, 1/6 of the bill) [retry-tax-20pct]; no retries (tax 0) [no-retries]; a
redelivered first attempt and a redelivered retry [duplicate-*]; a retry is not a duplicate
[retry-not-duplicate]; a late event [late-event]; ts exactly at a month's first second and at the
previous month's last second [month-boundary]; a retry in the next month, whose month has no first
attempt (increase undefined) [retry-across-months]; leap day [leap-day]; an attempt 2 before its
attempt 1, and alone [retry-before-first, retry-alone]; a redelivery whose tenant changed (the key
is (request_id, attempt) only) [duplicate-retagged]; a redelivery 9,999 events later
[duplicate-far].
"""

from __future__ import annotations

import random

from lab.exercises.meter.grading.common import (
    CASE_TIMEOUT_S,
    FEB,
    JAN,
    PRICES,
    ev,
    ledger,
    stream_case,
)
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _fixed() -> list[Case]:
    day = 86400
    twenty = [ev(f"r{i}", 800, 300) for i in range(10)]
    twenty += [ev(f"r{i}", 800, 300, attempt=2, ts=JAN + day + 5) for i in (3, 7)]
    return [
        ledger(2, "retry-full-price", "one request and its retry: both billed in full",
               [ev("a", 2400, 600, 1000), ev("a", 2400, 600, 1000, attempt=2, ts=JAN + day + 9)]),
        ledger(2, "retry-tax-20pct", "10 equal requests, 2 retried once: +20%, 1/6 of the bill",
               twenty),
        ledger(2, "no-retries", "no retries: the retry tax is 0", [ev("a", 800, 300)]),
        ledger(2, "duplicate-first-attempt", "the same event delivered twice, 60 s apart",
               [ev("d", 12_000, 4000), ev("d", 12_000, 4000, received=JAN + day + 60),
                 ev("e", 800, 300)]),
        ledger(2, "duplicate-retry", "a retry delivered twice",
               [ev("d", 800, 300), ev("d", 800, 300, attempt=2, ts=JAN + day + 1),
                 ev("d", 800, 300, attempt=2, ts=JAN + day + 1, received=JAN + day + 99)]),
        ledger(2, "retry-not-duplicate", "attempts 1, 2 and 3 of one request, identical tokens",
               [ev("k", 1000, 100, attempt=a, ts=JAN + day + a) for a in (1, 2, 3)]),
        ledger(2, "late-event", "an event that ran on 31 January reaches the meter in February",
               [ev("l", 5000, 500, ts=FEB - 3600, received=FEB + 7200), ev("m", 800, 300,
                                                                            ts=FEB + 7200)]),
        ledger(2, "month-boundary", "ts at 2026-02-01T00:00:00Z is February; one second "
               "earlier is January",
               [ev("b1", 1000, 100, ts=FEB - 1), ev("b2", 2000, 200, ts=FEB)]),
        ledger(2, "retry-across-months", "attempt 1 on 31 January, its retry on 1 February",
               [ev("x", 2400, 600, ts=FEB - 10),
                 ev("x", 2400, 600, attempt=2, ts=FEB + 10)]),
        ledger(2, "retry-before-first", "attempt 2 of a request arrives before its attempt "
               "1 (other token counts): the attempt number, not the arrival order, makes it a "
               "retry", [ev("o", 12_000, 4000, attempt=2, ts=JAN + day + 30),
                          ev("o", 800, 300, ts=JAN + day), ev("p", 1000, 100)],
                hint="a retry is recognised by its attempt number (attempt >= 2), not by "
                     "arriving after another event of the same request"),
        ledger(2, "retry-alone", "an attempt 2 whose attempt 1 never reaches the meter is a "
               "retry", [ev("r", 12_000, 4000, attempt=2), ev("s", 800, 300)],
               hint="a retry is recognised by its attempt number (attempt >= 2), even when no "
                     "attempt 1 of that request was seen"),
        ledger(2, "duplicate-retagged", "a redelivery whose tenant tag changed on the way "
               "(search, then ads, then untagged): the same (request_id, attempt), billed once",
               [ev("d", 12_000, 4000, tenant="search"),
                 ev("d", 12_000, 4000, tenant="ads", received=JAN + day + 60),
                 ev("d", 12_000, 4000, tenant=None, received=JAN + day + 90),
                 ev("e", 800, 300)],
                hint="a duplicate is the same (request_id, attempt), whatever else the "
                     "redelivery says: the key is those two fields only"),
        Case(id="duplicate-far", level=2, description="an event redelivered 9,999 events after "
             "its first delivery (the latest the window allows): billed once",
             timeout_s=CASE_TIMEOUT_S, size=10_500,
             params={"function": "ledger", "prices": PRICES,
                     "stream": {"seed": "duplicate-far", "n": 10_500, "far_dup": True},
                     "hint": "a redelivery arrives up to 9,999 events after the first delivery: "
                             "remember each (request_id, attempt) for the 10,000 events that "
                             "follow it"}),
        ledger(2, "leap-day", "29 February 2028 is in 2028-02",
               [ev("leap", 1000, 100, ts=1835395200 + 3600)]),  # 2028-02-29T01:00:00Z
    ]


def _hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/2/{seed}")
    out = []
    for i in range(8):
        spec = {"seed": f"2-{seed}-{i}", "n": rng.choice([40, 200, 800]), "dup": 0.08,
                "retry": 0.12, "late": 0.15, "months": rng.choice([1, 2, 3])}
        out.append(stream_case(2, f"hidden-{i:02d}", f"seeded stream of {spec['n']} events "
                               "with redeliveries, retries and late events", spec))
    return out

