"""Seeded usage-event streams for `meter`: lazy (a generator, for the streaming level) and small.

The same spec always yields the same events. Streams honour the statement's promises: a
redelivered event (same request id and attempt) arrives fewer than DEDUP_WINDOW events after its
first delivery, and a retry has the same request id with the next attempt number. `received_ts`
is when the event reached the meter; `ts` is when the request ran (late events: ts in an earlier
month than received_ts).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

DEDUP_WINDOW = 10_000
POOL, DRAWS, RECENT = 1024, 1021, 32  # ready-made requests, precomputed draws (a prime)
TIERS = ("fast", "flagship", "frontier")
# Month starts (UTC) used by the streams: a 31-, a 28- and a 30-day month.
MONTH_STARTS = tuple(
    int(datetime(2026, m, 1, tzinfo=UTC).timestamp()) for m in (1, 2, 3, 4)
)


def events(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield `spec["n"]` events (counting redeliveries) from a seeded mix.

    spec keys: seed, n, and optional rates: dup, retry, late, untagged, shared (0..1), tenants
    (names), tiers (names), months (how many consecutive months from 2026-01, at most 3),
    far_dup (redeliver the first event DEDUP_WINDOW - 1 events later), max_prompt,
    max_output.
    """
    rng = random.Random(f"meter-stream/{spec['seed']}")
    n, seed = int(spec["n"]), spec["seed"]
    dup, retry, late = spec.get("dup", 0.0), spec.get("retry", 0.0), spec.get("late", 0.0)
    untagged, shared = spec.get("untagged", 0.0), spec.get("shared", 0.0)
    tenants = tuple(spec.get("tenants", ("search", "ads", "support")))
    tiers = tuple(spec.get("tiers", TIERS))
    months = int(spec.get("months", 2))
    max_prompt, max_output = int(spec.get("max_prompt", 16_000)), int(spec.get("max_output", 4_000))
    start, end = MONTH_STARTS[0], MONTH_STARTS[months]
    span = end - start
    # Precomputed draws keep a stream cheap to produce: the consumer's work, not the generator's,
    # should dominate the streaming level's time (and a timed call's setup stays ~1 ms). A new
    # request is a copy of a ready-made event from the pool with its id and times filled in (a
    # copy of a small dict costs a fraction of building one).
    rand = rng.random

    def below(m: int) -> int:  # uniform in 0..m-1 (int(random() * m) < m for any m < 2**53)
        return int(rand() * m)

    pool: list[dict[str, Any]] = []
    lags: list[int] = []
    for _ in range(max(1, min(POOL, n))):
        prompt = below(max_prompt + 1)
        tenant = None if rand() < untagged else tenants[below(len(tenants))]
        owner = tenants[below(len(tenants))] if rand() < shared else tenant
        cached = below(prompt + 1) if rand() < 0.6 else 0
        lags.append(1 + below(max(1, span // 3 - 1)) if rand() < late else 0)
        pool.append({"request_id": "", "tenant": tenant, "tier": tiers[below(len(tiers))],
                     "prompt_tokens": prompt, "cached_tokens": cached,
                     "output_tokens": below(max_output + 1), "attempt": 1, "ts": 0,
                     "received_ts": 0, "prefix_owner": owner})
    draws = [rand() for _ in range(DRAWS)]
    outputs = [below(max_output + 1) for _ in range(DRAWS)]
    again = dup + retry  # a draw below this re-sends a recent request (dup) or retries it
    prefix, size = f"r{seed}-", len(pool)
    # one recent first delivery per slot (with its position), for retries and redeliveries
    recent: list[tuple[int, dict[str, Any]] | None] = [None] * RECENT
    serial = 0
    first: dict[str, Any] | None = None
    far = bool(spec.get("far_dup"))
    for i in range(n):
        now = start + span * i // n
        if far and i == DEDUP_WINDOW - 1 and first is not None:
            yield {**first, "received_ts": now}  # the latest redelivery the window allows
            continue
        r = draws[i % DRAWS]
        slot = (i * 7 + serial) % RECENT
        entry = recent[slot]
        if r < again and entry is not None:
            at, old = entry
            if r < dup and i - at < DEDUP_WINDOW:
                yield {**old, "received_ts": now}  # redelivered: same request id and attempt
                continue
            event = {**old, "attempt": old["attempt"] + 1, "ts": max(old["ts"], now - 30),
                     "received_ts": now, "output_tokens": outputs[i % DRAWS]}
            recent[slot] = (i, event)  # the retry replaces its request's entry
            yield event
            continue
        k = serial % size
        serial += 1
        event = pool[k].copy()
        event["request_id"] = prefix + str(serial)
        ts = now - lags[k]
        event["ts"] = ts if ts >= start else now
        event["received_ts"] = now
        recent[slot] = (i, event)
        if first is None:
            first = event
        yield event
