"""Reference for the `meter` exercise (same interface as lab/exercises/meter/stub.py).

One pass over the events, bounded memory: token counts are summed as integers per
(month, tier, tenant) bucket and priced once at the end, which is exact (dollars are linear in
tokens) and cheap. Duplicates are remembered only inside the delivery window the statement
guarantees. The pure formulas at the top are shared with the metering sim (`lab/sims/metering.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, TypeVar

PER = 1_000_000  # prices are per 1M tokens
UNTAGGED_LIMIT = Decimal("0.10")  # the ledger check: untagged dollars <= 10% of the month
DEDUP_WINDOW = 10_000  # a redelivered event arrives fewer than this many events after the first
CENT = Decimal("0.01")
RATE_STEP = Decimal("0.0001")  # $ per 1M and shares are reported to 4 decimal places

N = TypeVar("N", float, Decimal)


# -- formulas (shared with lab/sims/metering.py; generic over float and Decimal) --------------
def line_costs(fresh_in: N, cached_in: N, out: N, rate_in: N, rate_out: N,
               cached_fraction: N) -> tuple[N, N, N]:
    """Dollars for fresh prompt, cached prompt and output tokens (rates per 1M tokens)."""
    return (fresh_in * rate_in / PER, cached_in * rate_in * cached_fraction / PER,
            out * rate_out / PER)


def cached_discount(cached_in: N, rate_in: N, cached_fraction: N) -> N:
    """What reading `cached_in` tokens from the cache saved against the fresh input rate."""
    return cached_in * rate_in * (1 - cached_fraction) / PER


def blended_per_m(dollars: N, tokens: N) -> N | None:
    """Bill over every token moved (prompt, cached included, plus output), per 1M tokens."""
    return dollars / tokens * PER if tokens else None


def retry_tax(first: N, retries: N) -> tuple[N | None, N | None]:
    """(spend increase = retries / first attempts, share of the bill = retries / total)."""
    total = first + retries
    return (retries / first if first else None, retries / total if total else None)


def share(part: N, whole: N) -> N | None:
    return part / whole if whole else None


def untagged_ok(untagged: Decimal, total: Decimal, limit: Decimal = UNTAGGED_LIMIT) -> bool:
    """The ledger check on exact dollars: fails only when untagged > limit · total."""
    return untagged <= limit * total


# -- rounding ----------------------------------------------------------------------------------
def cents(x: Decimal) -> Decimal:
    return x.quantize(CENT, rounding=ROUND_HALF_UP)


def four(x: Decimal | None) -> Decimal | None:
    return None if x is None else x.quantize(RATE_STEP, rounding=ROUND_HALF_UP)


# -- prices and events -------------------------------------------------------------------------
def _decimal(value: object, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ValueError(f"{what} must be a decimal string or an int, got {value!r}")
    try:
        out = Decimal(value)
    except ArithmeticError:
        raise ValueError(f"{what} is not a number: {value!r}") from None
    if not out.is_finite() or out < 0:
        raise ValueError(f"{what} must be a finite non-negative number, got {value!r}")
    return out


def rates(prices: Mapping[str, Any]) -> tuple[dict[str, tuple[Decimal, Decimal]], Decimal]:
    tiers = {
        str(tier): (_decimal(r["in"], f"{tier} input rate"),
                    _decimal(r["out"], f"{tier} output rate"))
        for tier, r in prices["tiers"].items()
    }
    fraction = _decimal(prices["cached_fraction"], "cached_fraction")
    if fraction > 1:
        raise ValueError(f"cached_fraction must be at most 1, got {fraction}")
    return tiers, fraction


def _count(event: Mapping[str, Any], key: str) -> int:
    value = event[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} must be a non-negative int, got {value!r}")
    return value


def _tokens(event: Mapping[str, Any]) -> tuple[int, int, int]:
    prompt, cached = _count(event, "prompt_tokens"), _count(event, "cached_tokens")
    if cached > prompt:
        raise ValueError(f"request {event['request_id']}: cached_tokens {cached} > "
                         f"prompt_tokens {prompt}")
    return prompt - cached, cached, _count(event, "output_tokens")


def month_of(ts: int) -> str:
    """The UTC calendar month of a unix timestamp, 'YYYY-MM'."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def bill_request(event: Mapping[str, Any], prices: Mapping[str, Any]) -> dict[str, Decimal]:
    """Exact (unrounded) dollars of one event."""
    tiers, fraction = rates(prices)
    if event["tier"] not in tiers:
        raise ValueError(f"unknown tier {event['tier']!r}")
    rate_in, rate_out = tiers[event["tier"]]
    fresh, cached, out = (Decimal(n) for n in _tokens(event))
    f, c, o = line_costs(fresh, cached, out, rate_in, rate_out, fraction)
    return {"fresh_input": f, "cached_input": c, "output": o,
            "cached_discount": cached_discount(cached, rate_in, fraction), "total": f + c + o}


# -- the ledger --------------------------------------------------------------------------------
def ledger(events: Iterable[Mapping[str, Any]], prices: Mapping[str, Any]) -> dict[str, Any]:
    tiers, fraction = rates(prices)
    buckets, shared = accumulate(events, tiers)
    return {"months": report(exact_months(buckets, shared, tiers, fraction))}


Buckets = dict[tuple[str, str, str | None], list[int]]
_INTS = (int, int, int)  # a bool is not a token count: types compared exactly
Shared = dict[tuple[str, str, str | None, str], int]


def accumulate(
    events: Iterable[Mapping[str, Any]], tiers: Mapping[str, object]
) -> tuple[Buckets, Shared]:
    """One pass: integer token sums per (month, tier, tenant), first attempts then retries, and
    per (month, tier, reader, owner) the cached tokens read from another tenant's prefix."""
    buckets: Buckets = {}
    shared: Shared = {}
    # The keys delivered in the last DEDUP_WINDOW positions: `seen`, and `ring[i % W]` = the key
    # first delivered at position i (None for a redelivery), forgotten when position i + W
    # reuses its slot.
    seen: set[tuple[Any, int]] = set()
    ring: list[tuple[Any, int] | None] = [None] * DEDUP_WINDOW
    day_month: dict[int, str] = {}
    for i, event in enumerate(events):
        attempt = event["attempt"]
        if type(attempt) is not int or attempt < 1:  # type(): a bool is not an attempt number
            raise ValueError(f"attempt must be an int >= 1, got {attempt!r}")
        key = (event["request_id"], attempt)
        slot = i % DEDUP_WINDOW
        expired = ring[slot]
        if expired is not None:
            seen.discard(expired)
        if key in seen:
            ring[slot] = None
            continue
        seen.add(key)
        ring[slot] = key
        tier = event["tier"]
        if tier not in tiers:
            raise ValueError(f"request {event['request_id']}: unknown tier {tier!r}")
        prompt, cached, out = event["prompt_tokens"], event["cached_tokens"], event["output_tokens"]
        if (type(prompt), type(cached), type(out)) != _INTS or not 0 <= cached <= prompt or out < 0:
            _tokens(event)  # raises the specific error
        ts = event["ts"]
        if type(ts) is not int:
            raise ValueError(f"ts must be an int (unix seconds), got {ts!r}")
        day = ts // 86400
        month = day_month.get(day)
        if month is None:
            month = day_month[day] = month_of(ts)
        tenant = event.get("tenant") or None
        b = buckets.get((month, tier, tenant))
        if b is None:
            b = buckets[(month, tier, tenant)] = [0, 0, 0, 0, 0, 0]
        j = 0 if attempt == 1 else 3
        b[j] += prompt - cached
        b[j + 1] += cached
        b[j + 2] += out
        owner = event.get("prefix_owner") or None
        if cached and owner is not None and owner != tenant:
            k = (month, tier, tenant, owner)
            shared[k] = shared.get(k, 0) + cached
    return buckets, shared


def exact_months(
    buckets: Buckets, shared: Shared, tiers: Mapping[str, tuple[Decimal, Decimal]],
    fraction: Decimal,
) -> dict[str, dict[str, Any]]:
    """Exact (unrounded) dollars per month: tier lines, attempts, tenants, prefix transfers."""
    zero = Decimal(0)
    exact: dict[str, dict[str, Any]] = {}
    with localcontext() as ctx:
        ctx.prec = 60
        for (month, tier, tenant), b in buckets.items():
            rate_in, rate_out = tiers[tier]
            m = exact.setdefault(month, {"tiers": {}, "tokens": 0, "cached_tokens": 0,
                                         "first": zero, "retries": zero, "tenants": {},
                                         "untagged": zero, "transfer": {}})
            t = m["tiers"].setdefault(tier, [zero] * 4)
            spent = zero
            for j, label in ((0, "first"), (3, "retries")):
                fresh, cached, out = (Decimal(n) for n in b[j:j + 3])
                f, c, o = line_costs(fresh, cached, out, rate_in, rate_out, fraction)
                t[0] += f
                t[1] += c
                t[2] += o
                t[3] += cached_discount(cached, rate_in, fraction)
                m[label] += f + c + o
                spent += f + c + o
                m["tokens"] += b[j] + b[j + 1] + b[j + 2]
                m["cached_tokens"] += b[j + 1]
            if tenant is None:
                m["untagged"] += spent
            else:
                m["tenants"][tenant] = m["tenants"].get(tenant, zero) + spent
        for (month, tier, reader, owner), cached_tokens in shared.items():
            moved = cached_discount(Decimal(cached_tokens), tiers[tier][0], fraction) / 2
            transfer = exact[month]["transfer"]
            transfer[reader] = transfer.get(reader, zero) + moved
            transfer[owner] = transfer.get(owner, zero) - moved
    return exact


def report(
    exact: dict[str, dict[str, Any]],
    money: Callable[[Decimal], Decimal] = cents,
    ratio: Callable[[Decimal | None], Decimal | None] = four,
) -> dict[str, dict[str, Any]]:
    """The month bills as reported: every figure rounded once from its exact value."""
    zero = Decimal(0)
    months: dict[str, dict[str, Any]] = {}
    with localcontext() as ctx:
        ctx.prec = 60
        for month in sorted(exact):
            m = exact[month]
            total = m["first"] + m["retries"]
            increase, retry_share = retry_tax(m["first"], m["retries"])
            charge = {name: amount + m["transfer"].get(name, zero)
                      for name, amount in m["tenants"].items()}
            for name, moved in m["transfer"].items():
                if name is not None and name not in charge:
                    charge[name] = moved
            months[month] = {
                "tiers": {tier: {"fresh_input": money(f), "cached_input": money(c),
                                 "output": money(o), "cached_discount": money(d),
                                 "total": money(f + c + o)}
                          for tier, (f, c, o, d) in sorted(m["tiers"].items())},
                "total": money(total),
                "tokens": m["tokens"],
                "blended_per_m": ratio(blended_per_m(total, Decimal(m["tokens"]))),
                "first_attempts": money(m["first"]),
                "retries": money(m["retries"]),
                "retry_spend_increase": ratio(increase),
                "retry_share_of_bill": ratio(retry_share),
                "tenants": {name: money(v) for name, v in sorted(m["tenants"].items())},
                "untagged": money(m["untagged"]),
                "untagged_share": ratio(share(m["untagged"], total)),
                "untagged_ok": untagged_ok(m["untagged"], total),
                "chargeback": {name: money(v) for name, v in sorted(charge.items())},
                "chargeback_untagged": money(m["untagged"] + m["transfer"].get(None, zero)),
            }
    return months
