"""Parent side of `meter`: the ledger recomputed with one known mistake, to name a wrong answer.

Each variant reuses the reference's formulas (`lab.reference.meter`, imported lazily so this
module stays importable in the sandbox child) and changes one rule: how events are counted,
which month they land in, how cached tokens are priced, how figures are rounded, how the retry
tax, the untagged check or the chargeback are computed. A variant that happens to agree with the
right answer explains nothing and is skipped by the caller.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any, cast

BUGS: dict[str, str] = {
    "float": "float arithmetic drifts off the exact amount (a half-cent tie rounds the wrong "
             "way): price with decimal.Decimal from the price sheet's strings",
    "half_even": "round half up (ROUND_HALF_UP): $0.025 is $0.03 — Python's round() and "
                 "Decimal's default round half to even",
    "round_each_event": "round once, at the end: rounding every event to the cent first loses "
                        "or adds fractions of a cent per event",
    "cached_free": "cached prompt tokens are not free: they bill at cached_fraction × the input "
                   "rate",
    "cached_full": "cached prompt tokens bill at cached_fraction × the input rate, not at the full "
                   "input rate",
    "cached_twice": "prompt_tokens includes the cached ones: bill prompt − cached at the fresh "
                    "rate and cached at the cached rate, not the whole prompt fresh as well",
    "dup_twice": "a redelivered event (same request_id and attempt) must be billed once",
    "retry_dropped": "a retry (same request_id, attempt ≥ 2) is a new attempt billed in full, "
                     "not a duplicate",
    "retry_by_arrival": "a retry is recognised by its attempt number (attempt >= 2), not by "
                        "arriving after another event of the same request (an attempt 2 may "
                        "arrive first, or alone)",
    "dup_key_tenant": "a duplicate is the same (request_id, attempt), whatever else the "
                      "redelivery says (its tenant tag included): the key is those two fields",
    "received_month": "an event belongs to the UTC month of its ts (when the request ran), not "
                      "of received_ts (when it reached the meter)",
    "blended_fresh_only": "the blended rate divides by every token moved: prompt tokens "
                          "(cached ones included) plus output",
    "retry_share_swapped": "retry_spend_increase = retries ÷ first attempts; "
                           "retry_share_of_bill = retries ÷ the whole bill",
    "untagged_ge": "the ledger check fails only when untagged dollars are MORE than 10% of the "
                   "month: exactly 10% passes",
    "empty_tag": "an empty tenant tag ('') is untagged, like None",
    "chargeback_none": "a reader of another tenant's cached prefix pays half the saving to the "
                       "prefix's owner (chargeback)",
    "chargeback_full": "the saving on a shared prefix is split in half: the reader pays the "
                       "owner half, not all of it",
    "chargeback_reversed": "the reader pays the owner half the saving (not the other way round)",
}


def variant(events: Iterable[Mapping[str, Any]], prices: Mapping[str, Any],
            bug: str) -> dict[str, Any]:
    """The ledger as a solution with mistake `bug` would report it (rounded figures)."""
    from lab.reference import meter as ref

    events = list(events)
    tiers, fraction = ref.rates(prices)
    if bug in ("float", "round_each_event"):
        return _per_event(events, prices, bug)
    shaped = events
    if bug == "dup_twice":  # give every delivery its own key
        shaped = [{**e, "request_id": (e["request_id"], i)} for i, e in enumerate(events)]
    elif bug == "retry_dropped":
        shaped = [{**e, "attempt": 1} for e in events]
    elif bug == "retry_by_arrival":  # the first delivery of a request id is "attempt 1"
        arrived: set[Any] = set()
        keys: set[tuple[Any, int]] = set()
        shaped = []
        for e in events:  # dedup as the contract says, then relabel by arrival
            if (e["request_id"], e["attempt"]) in keys:
                continue
            keys.add((e["request_id"], e["attempt"]))
            first = e["request_id"] not in arrived
            arrived.add(e["request_id"])
            shaped.append({**e, "request_id": (e["request_id"], e["attempt"]),
                           "attempt": 1 if first else 2})
    elif bug == "dup_key_tenant":
        shaped = [{**e, "request_id": (e["request_id"], e.get("tenant"))} for e in events]
    elif bug == "received_month":
        shaped = [{**e, "ts": e.get("received_ts", e["ts"])} for e in events]
    elif bug == "cached_twice":
        shaped = [{**e, "prompt_tokens": e["prompt_tokens"] + e["cached_tokens"]} for e in events]
    elif bug == "empty_tag":
        shaped = [{**e, "tenant": "\0" if e.get("tenant") == "" else e.get("tenant"),
                   "prefix_owner": "\0" if e.get("prefix_owner") == ""
                   else e.get("prefix_owner")} for e in events]
    buckets, shared = ref.accumulate(shaped, tiers)
    if bug == "cached_free":
        fraction = Decimal(0)
    elif bug == "cached_full":
        fraction = Decimal(1)
    elif bug == "chargeback_none":
        shared = {}
    elif bug == "chargeback_full":
        shared = {k: 2 * v for k, v in shared.items()}
    elif bug == "chargeback_reversed":
        # the owner "reads" and the reader "owns" (None keys are fine for exact_months)
        shared = cast(Any, {(m, t, owner, reader): v
                            for (m, t, reader, owner), v in shared.items()})
    exact = ref.exact_months(buckets, shared, tiers, fraction)
    if bug == "half_even":
        months = ref.report(exact, lambda x: x.quantize(ref.CENT, ROUND_HALF_EVEN),
                            lambda x: None if x is None else x.quantize(ref.RATE_STEP,
                                                                        ROUND_HALF_EVEN))
    else:
        months = ref.report(exact)
    for month, m in months.items():
        e = exact[month]
        if bug == "blended_fresh_only":
            total = e["first"] + e["retries"]
            m["blended_per_m"] = ref.four(ref.blended_per_m(
                total, Decimal(e["tokens"] - e["cached_tokens"])))
        elif bug == "retry_share_swapped":
            m["retry_spend_increase"], m["retry_share_of_bill"] = (
                m["retry_share_of_bill"], m["retry_spend_increase"])
        elif bug == "untagged_ge":
            total = e["first"] + e["retries"]
            m["untagged_ok"] = not (total and e["untagged"] >= ref.UNTAGGED_LIMIT * total)
        elif bug == "empty_tag":
            for key in ("tenants", "chargeback"):
                if "\0" in m[key]:
                    m[key][""] = m[key].pop("\0")
    return {"months": months}


def _per_event(events: list[Mapping[str, Any]], prices: Mapping[str, Any],
               bug: str) -> dict[str, Any]:
    """Tier lines and totals summed event by event, in floats or in per-event cents."""
    from lab.reference import meter as ref

    months: dict[str, dict[str, Any]] = {}
    seen: set[tuple[Any, int]] = set()
    tiers, fraction = ref.rates(prices)
    for e in events:
        key = (e["request_id"], e["attempt"])
        if key in seen:
            continue
        seen.add(key)
        rate_in, rate_out = tiers[e["tier"]]
        fresh = e["prompt_tokens"] - e["cached_tokens"]
        if bug == "float":
            amounts: tuple[Any, ...] = ref.line_costs(
                float(fresh), float(e["cached_tokens"]), float(e["output_tokens"]),
                float(rate_in), float(rate_out), float(fraction))
        else:
            amounts = tuple(ref.cents(x) for x in ref.line_costs(
                Decimal(fresh), Decimal(e["cached_tokens"]), Decimal(e["output_tokens"]),
                rate_in, rate_out, fraction))
        m = months.setdefault(ref.month_of(e["ts"]), {"tiers": {}, "total": 0})
        t = m["tiers"].setdefault(e["tier"], {"fresh_input": 0, "cached_input": 0, "output": 0,
                                              "total": 0})
        for name, x in zip(("fresh_input", "cached_input", "output"), amounts, strict=True):
            t[name] += x
            t["total"] += x
            m["total"] += x
    for m in months.values():
        for t in [*m["tiers"].values(), m]:
            for name in ("fresh_input", "cached_input", "output", "total"):
                if name in t:
                    t[name] = _float_cents(t[name]) if bug == "float" else t[name]
    return {"months": copy.deepcopy(months)}


def _float_cents(x: float) -> Decimal:
    """What `Decimal(round(x, 2))`-style code reports for a float sum."""
    return Decimal(repr(round(x, 2))).quantize(Decimal("0.01"), ROUND_HALF_UP)
