"""What meter's levels share: the price sheet, the months, and the builders of events and cases."""

from __future__ import annotations

from typing import Any

from lab.exercises.meter import streams
from lab.grader.api import Case

PRICES = {"tiers": {"fast": {"in": "0.80", "out": "4.00"},
                    "flagship": {"in": "3.00", "out": "15.00"},
                    "frontier": {"in": "15.00", "out": "75.00"}},
          "cached_fraction": "0.10"}
JAN = streams.MONTH_STARTS[0]  # 2026-01-01T00:00:00Z
FEB = streams.MONTH_STARTS[1]
MAR = streams.MONTH_STARTS[2]
CASE_TIMEOUT_S = 5.0
DIAGNOSE_MAX_EVENTS = 5000

MONEY = ("total", "first_attempts", "retries", "untagged", "chargeback_untagged")
FIELDS: dict[int, tuple[str, ...]] = {
    1: ("tiers", "total", "tokens", "blended_per_m"),
    2: ("first_attempts", "retries", "retry_spend_increase", "retry_share_of_bill"),
    3: ("tenants", "untagged", "untagged_share", "untagged_ok", "chargeback",
        "chargeback_untagged"),
}
LEVEL_BUGS: dict[int, tuple[str, ...]] = {
    1: ("float", "half_even", "round_each_event", "cached_free", "cached_full", "cached_twice",
        "blended_fresh_only"),
    2: ("dup_twice", "retry_dropped", "received_month", "retry_share_swapped", "dup_key_tenant",
        "retry_by_arrival"),
    3: ("untagged_ge", "empty_tag", "chargeback_none", "chargeback_full",
        "chargeback_reversed"),
}


def fields(level: int) -> tuple[str, ...]:
    return tuple(f for lvl in range(1, min(level, 3) + 1) for f in FIELDS[lvl])


def ev(rid: str, prompt: int, out: int, cached: int = 0, *, tier: str = "flagship",
       tenant: str | None = "search", attempt: int = 1, ts: int = JAN + 86400,
       received: int | None = None, owner: str | None = None) -> dict[str, Any]:
    return {"request_id": rid, "tenant": tenant, "tier": tier, "prompt_tokens": prompt,
            "cached_tokens": cached, "output_tokens": out, "attempt": attempt, "ts": ts,
            "received_ts": ts if received is None else received,
            "prefix_owner": tenant if owner is None else owner}


def ledger(level: int, cid: str, description: str, events: list[dict[str, Any]],
           prices: dict[str, Any] | None = None, hint: str | None = None) -> Case:
    """`hint`: the rule this case is about, added to a mismatch no known mistake explains."""
    params: dict[str, Any] = {"function": "ledger", "events": events, "prices": prices or PRICES}
    if hint:
        params["hint"] = hint
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S,
                size=len(events), params=params)


def request(level: int, cid: str, description: str, event: dict[str, Any]) -> Case:
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S, size=1,
                params={"function": "bill_request", "event": event, "prices": PRICES})


def stream_case(level: int, cid: str, description: str, spec: dict[str, Any]) -> Case:
    return ledger(level, cid, description, list(streams.events(spec)))

