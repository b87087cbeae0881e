"""Grading spec for `meter` (parent side): fixed boundary cases, seeded hidden cases, exact checks.

Every amount is compared exactly with the reference's (Decimal, rounded once to the cent, half up);
a wrong figure is reported with its path in the ledger and, where a known mistake reproduces it
(see `diagnose.py`), the rule that was missed. This module never imports the reference at import
time (it is also imported in the sandbox child until the judge runner lands).

Boundaries each level covers with a case (ids in brackets):
- Level 1: 0 events [no-events]; an event of 0 tokens [zero-tokens]; every prompt token cached
  [all-cached]; half-cent ties that float arithmetic and round-half-even get wrong
  [half-cent-tie-*]; sub-cent events that per-event rounding loses [sub-cent-events]; an unknown
  tier and cached > prompt raise ValueError [unknown-tier, cached-over-prompt]; one request
  billed exactly (the topic's worked example) [request-*].
- Level 2: a retry billed in full [retry-full-price]; 20% of requests retried once (+20%, 1/6 of
  the bill) [retry-tax-20pct]; no retries (tax 0) [no-retries]; a redelivered first attempt and a
  redelivered retry [duplicate-*]; a retry is not a duplicate [retry-not-duplicate]; a late event
  [late-event]; ts exactly at a month's first second and at the previous month's last second
  [month-boundary]; a retry in the next month, whose month has no first attempt (increase
  undefined) [retry-across-months]; leap day [leap-day]; an attempt 2 before its attempt 1,
  and alone [retry-before-first, retry-alone]; a redelivery whose tenant changed (the key is
  (request_id, attempt) only) [duplicate-retagged]; a redelivery 9,999 events later
  [duplicate-far].
- Level 3: untagged exactly 10% of dollars (passes) and one token over (fails)
  [untagged-exactly-10pct, untagged-just-over]; over 10% by less than the reported share shows
  (0.10000009 reads 0.1000 and fails) [untagged-rounds-to-10pct]; 0 dollars (share undefined,
  passes)
  [zero-dollars]; untagged small by requests but large by dollars [untagged-by-dollars]; '' is
  untagged [empty-tag]; shared prefix read by another tenant, by the untagged line, by its owner,
  and an owner with no requests that month; an owner of '' (nobody); a shared-prefix event
  redelivered (moves money once); a reader tagged '' (its charge is untagged) [prefix-empty-tag-
  reader]; a credit of exactly -$0.135 (rounds away from zero to -$0.14)
  [prefix-*].
- Level 4: an empty stream; a redelivery 9,999 events after the first (inside the window); 10^6
  events under the memory cap, timed beside the reference's run of the same stream (one call
  each: seconds of work, so no batches).
"""

from __future__ import annotations

import functools
import json
import random
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from lab.exercises.meter import streams
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.meter"

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


def _ledger(level: int, cid: str, description: str, events: list[dict[str, Any]],
            prices: dict[str, Any] | None = None, hint: str | None = None) -> Case:
    """`hint`: the rule this case is about, added to a mismatch no known mistake explains."""
    params: dict[str, Any] = {"function": "ledger", "events": events, "prices": prices or PRICES}
    if hint:
        params["hint"] = hint
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S,
                size=len(events), params=params)


def _request(level: int, cid: str, description: str, event: dict[str, Any]) -> Case:
    return Case(id=cid, level=level, description=description, timeout_s=CASE_TIMEOUT_S, size=1,
                params={"function": "bill_request", "event": event, "prices": PRICES})


# -- level 1 ---------------------------------------------------------------------------------------
def _level1_fixed() -> list[Case]:
    copilot = ev("c1", 2400, 600)
    many_small = [ev(f"s{i}", 1333, 0, tier="fast") for i in range(9)]  # $0.0010664 each
    return [
        _request(1, "request-uncached", "copilot request 2,400 in / 600 out, flagship", copilot),
        _request(1, "request-cached-prefix", "the same request with a 2,000-token cached prefix",
                 ev("c2", 2400, 600, 2000)),
        _request(1, "request-zero-tokens", "a request of 0 tokens costs $0", ev("z", 0, 0)),
        _request(1, "request-unknown-tier", "tier 'turbo' is not on the price sheet",
                 ev("t", 10, 10, tier="turbo")),
        _ledger(1, "no-events", "no events: no months", []),
        _ledger(1, "zero-tokens", "one event of 0 tokens: $0.00 and no blended rate",
                [ev("z", 0, 0)]),
        _ledger(1, "one-request", "one copilot request with a cached prefix",
                [ev("c2", 2400, 600, 2000)]),
        _ledger(1, "all-cached", "every prompt token read from the cache",
                [ev("a1", 100_000, 0, 100_000, tier="frontier")]),
        _ledger(1, "half-cent-tie-input", "5,000 fresh flagship tokens = $0.015 exactly",
                [ev("h1", 5000, 0)]),
        _ledger(1, "half-cent-tie-even", "fast tier: 31,250 in = $0.025 and 11,250 out = $0.045, "
                "ties that round-half-even sends down",
                [ev("h2", 31_250, 11_250, tier="fast")]),
        _ledger(1, "half-cent-tie-output", "frontier: 3,400 output tokens = $0.255",
                [ev("h4", 0, 3400, tier="frontier")]),
        _ledger(1, "half-cent-tie-cached", "flagship: 50,000 cached tokens = $0.015",
                [ev("h5", 50_000, 0, 50_000)]),
        _ledger(1, "sub-cent-events", "nine events of $0.0010664: $0.0096 in all, not 9 × $0.00",
                many_small),
        _ledger(1, "three-tiers", "one request per tier",
                [ev("f", 800, 300, tier="fast"), ev("g", 2400, 600, 1200),
                 ev("x", 12_000, 4000, 8000, tier="frontier")]),
        _ledger(1, "unknown-tier", "an event on a tier the price sheet lacks",
                [ev("ok", 10, 10), ev("bad", 10, 10, tier="turbo")]),
        _ledger(1, "cached-over-prompt", "cached_tokens 600 > prompt_tokens 500",
                [ev("bad", 500, 10, 600)]),
    ]


def _random_events(rng: random.Random, n: int, *, month: int = JAN) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        prompt = rng.choice([0, rng.randrange(1, 200), rng.randrange(200, 20_000)])
        cached = rng.choice([0, 0, prompt, rng.randrange(prompt + 1)])
        out.append(ev(f"q{i}", prompt, rng.randrange(5000), cached,
                      tier=rng.choice(list(PRICES["tiers"])),
                      ts=month + rng.randrange(28 * 86400)))
    return out


def _level1_hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/1/{seed}")
    cases = []
    for i in range(8):
        event = _random_events(rng, 1)[0]
        cases.append(_request(1, f"hidden-request-{i:02d}", "seeded request", event))
    for i in range(8):
        n = rng.choice([2, 10, 50, 300])
        cases.append(_ledger(1, f"hidden-month-{i:02d}", f"seeded month of {n} events",
                             _random_events(rng, n)))
    return cases


# -- level 2 ---------------------------------------------------------------------------------------
def _level2_fixed() -> list[Case]:
    day = 86400
    twenty = [ev(f"r{i}", 800, 300) for i in range(10)]
    twenty += [ev(f"r{i}", 800, 300, attempt=2, ts=JAN + day + 5) for i in (3, 7)]
    return [
        _ledger(2, "retry-full-price", "one request and its retry: both billed in full",
                [ev("a", 2400, 600, 1000), ev("a", 2400, 600, 1000, attempt=2, ts=JAN + day + 9)]),
        _ledger(2, "retry-tax-20pct", "10 equal requests, 2 retried once: +20%, 1/6 of the bill",
                twenty),
        _ledger(2, "no-retries", "no retries: the retry tax is 0", [ev("a", 800, 300)]),
        _ledger(2, "duplicate-first-attempt", "the same event delivered twice, 60 s apart",
                [ev("d", 12_000, 4000), ev("d", 12_000, 4000, received=JAN + day + 60),
                 ev("e", 800, 300)]),
        _ledger(2, "duplicate-retry", "a retry delivered twice",
                [ev("d", 800, 300), ev("d", 800, 300, attempt=2, ts=JAN + day + 1),
                 ev("d", 800, 300, attempt=2, ts=JAN + day + 1, received=JAN + day + 99)]),
        _ledger(2, "retry-not-duplicate", "attempts 1, 2 and 3 of one request, identical tokens",
                [ev("k", 1000, 100, attempt=a, ts=JAN + day + a) for a in (1, 2, 3)]),
        _ledger(2, "late-event", "an event that ran on 31 January reaches the meter in February",
                [ev("l", 5000, 500, ts=FEB - 3600, received=FEB + 7200), ev("m", 800, 300,
                                                                            ts=FEB + 7200)]),
        _ledger(2, "month-boundary", "ts at 2026-02-01T00:00:00Z is February; one second "
                "earlier is January",
                [ev("b1", 1000, 100, ts=FEB - 1), ev("b2", 2000, 200, ts=FEB)]),
        _ledger(2, "retry-across-months", "attempt 1 on 31 January, its retry on 1 February",
                [ev("x", 2400, 600, ts=FEB - 10),
                 ev("x", 2400, 600, attempt=2, ts=FEB + 10)]),
        _ledger(2, "retry-before-first", "attempt 2 of a request arrives before its attempt "
                "1 (other token counts): the attempt number, not the arrival order, makes it a "
                "retry", [ev("o", 12_000, 4000, attempt=2, ts=JAN + day + 30),
                          ev("o", 800, 300, ts=JAN + day), ev("p", 1000, 100)],
                hint="a retry is recognised by its attempt number (attempt >= 2), not by "
                     "arriving after another event of the same request"),
        _ledger(2, "retry-alone", "an attempt 2 whose attempt 1 never reaches the meter is a "
                "retry", [ev("r", 12_000, 4000, attempt=2), ev("s", 800, 300)],
                hint="a retry is recognised by its attempt number (attempt >= 2), even when no "
                     "attempt 1 of that request was seen"),
        _ledger(2, "duplicate-retagged", "a redelivery whose tenant tag changed on the way "
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
        _ledger(2, "leap-day", "29 February 2028 is in 2028-02",
                [ev("leap", 1000, 100, ts=1835395200 + 3600)]),  # 2028-02-29T01:00:00Z
    ]


def _stream_case(level: int, cid: str, description: str, spec: dict[str, Any]) -> Case:
    return _ledger(level, cid, description, list(streams.events(spec)))


def _level2_hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/2/{seed}")
    out = []
    for i in range(8):
        spec = {"seed": f"2-{seed}-{i}", "n": rng.choice([40, 200, 800]), "dup": 0.08,
                "retry": 0.12, "late": 0.15, "months": rng.choice([1, 2, 3])}
        out.append(_stream_case(2, f"hidden-{i:02d}", f"seeded stream of {spec['n']} events "
                                "with redeliveries, retries and late events", spec))
    return out


# -- level 3 ---------------------------------------------------------------------------------------
def _level3_fixed() -> list[Case]:
    # flagship 1,000 in / 0 out = $0.003; 9 tagged + 1 untagged = exactly 10% untagged
    tenth = [ev(f"t{i}", 1000, 0, tenant="search") for i in range(9)]
    tenth.append(ev("u", 1000, 0, tenant=None))
    over = [*tenth[:-1], ev("u", 1001, 0, tenant=None)]
    agent = [ev(f"c{i}", 800, 300, tenant="chat") for i in range(99)]
    agent.append(ev("agent", 12_000, 4000, tenant=None))
    return [
        _ledger(3, "untagged-exactly-10pct", "untagged dollars exactly 10% of the month: passes",
                tenth),
        _ledger(3, "untagged-just-over", "one token more untagged: 10.0090% fails", over),
        _ledger(3, "untagged-rounds-to-10pct", "untagged $3.000003 of $30.000003: 10.000009% "
                "(reported as 0.1000) is over 10% and fails",
                [ev(f"m{i}", 1_000_000, 0) for i in range(9)]
                + [ev("u", 1_000_001, 0, tenant=None)],
                hint="the check compares the exact dollars (untagged ≤ 10% × total), not the "
                     "share rounded to 4 places"),
        _ledger(3, "untagged-by-dollars", "1% of requests untagged but 12% of dollars", agent),
        _ledger(3, "zero-dollars", "only 0-token events: no share, the check passes",
                [ev("z", 0, 0, tenant=None), ev("y", 0, 0)]),
        _ledger(3, "empty-tag", "tenant '' counts as untagged",
                [ev("a", 1000, 100, tenant=""), ev("b", 1000, 100, tenant="ads")]),
        _ledger(3, "prefix-shared", "ads reads 10,000 cached tokens of search's prefix",
                [ev("s", 12_000, 500, 10_000, tenant="search"),
                 ev("a", 12_000, 500, 10_000, tenant="ads", owner="search")]),
        _ledger(3, "prefix-own", "search reads its own prefix: nothing moves",
                [ev("s", 12_000, 500, 10_000, tenant="search", owner="search")]),
        _ledger(3, "prefix-untagged-reader", "an untagged request reads ads' prefix",
                [ev("u", 20_000, 0, 20_000, tenant=None, owner="ads"),
                 ev("a", 100, 100, tenant="ads")]),
        _ledger(3, "prefix-empty-tag-reader", "a request tagged '' (untagged) reads ads' prefix: "
                "the charge lands on the untagged line",
                [ev("e", 20_000, 0, 20_000, tenant="", owner="ads"),
                 ev("a", 100, 100, tenant="ads")],
                hint="a reader tagged '' is untagged: its charge goes to chargeback_untagged"),
        _ledger(3, "prefix-owner-idle", "support owns the prefix but sent nothing this month",
                [ev("r", 30_000, 10, 30_000, tier="frontier", tenant="ads", owner="support")]),
        _ledger(3, "prefix-owner-empty", "cached tokens with prefix_owner '' (no owner), read "
                "by ads and by an untagged request: nothing moves",
                [ev("a", 12_000, 500, 10_000, tenant="ads", owner=""),
                 ev("u", 12_000, 500, 10_000, tenant=None, owner=""),
                 ev("s", 100, 100, tenant="search")],
                hint="a prefix with no owner (None or '') moves nothing"),
        _ledger(3, "prefix-redelivered", "ads' read of search's prefix is delivered three "
                "times: billed once, and half the saving moves once",
                [ev("s", 1_200_000, 500, 1_000_000, tier="frontier", tenant="search"),
                 *(ev("a", 1_200_000, 500, 1_000_000, tier="frontier", tenant="ads",
                      owner="search", received=JAN + 86400 + lag) for lag in (0, 30, 90))],
                hint="a redelivered event is dropped before anything is counted, the "
                     "chargeback included"),
        _ledger(3, "prefix-credit-half-cent", "ads reads 100,000 flagship tokens of support's "
                "prefix: support (idle) is credited exactly $0.135, reported -0.14",
                [ev("r", 100_000, 0, 100_000, tenant="ads", owner="support")],
                hint="ROUND_HALF_UP rounds a half away from zero: a credit of -$0.135 is "
                     "-$0.14 (quantize with decimal.ROUND_HALF_UP)"),
    ]


def _level3_hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/3/{seed}")
    out = []
    for i in range(8):
        spec = {"seed": f"3-{seed}-{i}", "n": rng.choice([50, 300, 1000]), "dup": 0.05,
                "retry": 0.1, "late": 0.1, "months": rng.choice([1, 2]),
                "untagged": rng.choice([0.0, 0.05, 0.1, 0.2]), "shared": rng.choice([0.1, 0.4])}
        if rng.random() < 0.3:
            spec["tenants"] = ["search", "", "ads"]
        out.append(_stream_case(3, f"hidden-{i:02d}", f"seeded stream of {spec['n']} events "
                                "with tenants, untagged traffic and shared prefixes", spec))
    return out


# -- level 4 ---------------------------------------------------------------------------------------
BIG = 1_000_000


def _stream(cid: str, description: str, spec: dict[str, Any], *, timed: bool = False,
            timeout_s: float = CASE_TIMEOUT_S, hint: str | None = None) -> Case:
    params: dict[str, Any] = {"function": "ledger", "stream": spec, "prices": PRICES}
    if hint:
        params["hint"] = hint
    return Case(id=cid, level=4, description=description, size=int(spec["n"]), timed=timed,
                timed_once=timed, timeout_s=timeout_s, params=params)


def _level4(seed: int) -> list[Case]:
    mix = {"dup": 0.02, "retry": 0.05, "late": 0.02, "untagged": 0.08, "shared": 0.1,
           "months": 3}
    return [
        _stream("empty-stream", "a generator that yields nothing", {"seed": seed, "n": 0}),
        _stream("far-redelivery", "an event redelivered 9,999 events after its first delivery",
                {"seed": seed, "n": 12_000, **mix, "far_dup": True},
                hint="a redelivery arrives up to 9,999 events after the first delivery: "
                     "remember each (request_id, attempt) for the 10,000 events that follow it"),
        _stream("million-events", "10^6 events: one pass, bounded memory, timed beside the "
                "reference's pass", {"seed": seed, "n": BIG, **mix}, timed=True,
                timeout_s=120.0),
    ]


@functools.lru_cache(maxsize=4)
def _stream_expected(params: str) -> Any:
    from lab.exercises.meter import drive
    from lab.reference import meter as reference

    case = Case(id="", level=4, params=json.loads(params))
    return drive.run(reference, case, RunContext())


def expected(case: Case, ctx: RunContext) -> Any:
    """The reference's answer (the judge runner prefers this hook): a 10^6-event stream is
    priced once per process however many times it is graded (watch mode, tests)."""
    from lab.exercises.meter import drive
    from lab.reference import meter as reference

    if "stream" in case.params:
        return _stream_expected(json.dumps(drive.call_params(case, ctx), sort_keys=True))
    return drive.run(reference, case, ctx)


def cases(level: int, seed: int) -> list[Case]:
    if level == 1:
        return _level1_fixed() + _level1_hidden(seed)
    if level == 2:
        return _level2_fixed() + _level2_hidden(seed)
    if level == 3:
        return _level3_fixed() + _level3_hidden(seed)
    if level == 4:
        return _level4(seed)
    raise ValueError(f"meter has no level {level}")


# -- checking --------------------------------------------------------------------------------------
class Mismatch(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _show(x: Any) -> str:
    return "missing" if x is _MISSING else repr(x) if not isinstance(x, str) else x


_MISSING = object()


def _same(path: str, want: Any, got: Any) -> None:
    """Raise Mismatch at the first difference (want is the reference's plain output)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            raise Mismatch(path, f"{path}: expected a dict, got {_show(got)}")
        for key in want:
            if key not in got:
                shown = (f"a dict with keys {list(want[key])[:6]}" if isinstance(want[key], dict)
                         else _show(want[key]))
                raise Mismatch(path, f"{path}.{key} is missing (expected {shown}; you have "
                                     f"{list(got)[:6]})")
        extra = [k for k in got if k not in want]
        if extra:
            raise Mismatch(path, f"{path} has unexpected entries {extra[:3]} "
                                 f"(expected keys {list(want)[:6]})")
        for key in want:
            _same(f"{path}.{key}", want[key], got[key])
        return
    if isinstance(want, bool) or want is None:
        if got is not want:
            raise Mismatch(path, f"{path}: expected {want!r}, got {_show(got)}")
        return
    if isinstance(want, int):
        if isinstance(got, bool) or not isinstance(got, int) or got != want:
            raise Mismatch(path, f"{path}: expected {want:,} tokens, got {_show(got)}")
        return
    if isinstance(got, float):
        raise Mismatch(path, f"{path}: got the float {got!r} (expected Decimal('{want}')) — "
                             "money is exact: use decimal.Decimal, never float")
    if not isinstance(got, str):
        raise Mismatch(path, f"{path}: expected Decimal('{want}'), got {_show(got)}")
    try:
        same = Decimal(got) == Decimal(want)
    except InvalidOperation:
        same = False
    if not same:
        raise Mismatch(path, f"{path}: expected {want}, got {got}")


def _pick(value: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _diagnose(case: Case, path: str, got_value: Any, want_value: Any) -> str:
    events = case.params.get("events")
    if events is None or len(events) > DIAGNOSE_MAX_EVENTS:
        return ""
    from lab.exercises.meter import diagnose
    from lab.exercises.meter.drive import plain

    level = min(case.level, 3)
    bugs = [b for lvl in range(1, level + 1) for b in LEVEL_BUGS[lvl]]
    got_here, want_here = _pick(got_value, path), _pick(want_value, path)
    for bug in reversed(bugs):  # this level's own mistakes first
        try:
            variant = plain(diagnose.variant(events, case.params["prices"], bug))
        except (ValueError, KeyError, TypeError, ArithmeticError):
            continue
        here = _pick(_graded(variant, case.level, "ledger"), path)
        if here is _MISSING or _equal(here, want_here):
            continue
        if not _equal(here, got_here):
            continue
        if isinstance(want_here, bool) and not _month_agrees(variant, got_value, path, case):
            continue  # a yes/no figure agrees by chance: the variant must explain its month
        return diagnose.BUGS[bug]
    return ""


def _month_agrees(variant: Any, got: Any, path: str, case: Case) -> bool:
    """Whether the variant's month (the one `path` is in) equals the learner's, figure by figure
    on what this level grades."""
    month = ".".join(path.split(".")[:3])
    return _equal(_pick(_graded(variant, case.level, "ledger"), month), _pick(got, month))


def _equal(a: Any, b: Any) -> bool:
    """Plain ledgers equal figure by figure (Decimal strings compared as numbers)."""
    try:
        _same("", a, b)
    except Mismatch:
        return False
    return True


def _request_diagnosis(case: Case, path: str, got: Any) -> str:
    """bill_request: rounding, or cached tokens priced free or at the full rate."""
    from lab.exercises.meter import diagnose

    event, prices = case.params["event"], case.params["prices"]
    key = path.rsplit(".", 1)[-1]
    try:
        value = Decimal(got)
        rate_in = Decimal(prices["tiers"][event["tier"]]["in"])
    except (InvalidOperation, KeyError, TypeError):
        return ""
    cached = Decimal(event["cached_tokens"])
    exact = {"cached_input": cached * rate_in * Decimal(prices["cached_fraction"]) / 1_000_000}
    if key == "cached_input" and cached and value in (0, cached * rate_in / 1_000_000):
        return diagnose.BUGS["cached_free" if value == 0 else "cached_full"]
    if value == value.quantize(Decimal("0.01")) and key in ("fresh_input", "output", "total",
                                                              "cached_input") and (
            key != "cached_input" or exact["cached_input"] != value):
        return "bill_request returns the exact amount: do not round a single request"
    return ""


def _graded(value: Any, level: int, function: str) -> Any:
    """Only the figures this level grades (a later level's keys may be absent or anything)."""
    if function == "bill_request" or not isinstance(value, dict):
        return value
    months = value.get("months", _MISSING)
    if not isinstance(months, dict):
        return value
    keep = fields(level)
    return {"months": {m: ({k: v for k, v in fig.items() if k in keep}
                           if isinstance(fig, dict) else fig) for m, fig in months.items()}}


def _figure_hint(path: str, got: Any, want: Any) -> str:
    """A figure computed from another rounded figure instead of its own exact value."""
    month = _pick(want, path.rsplit(".", 1)[0])
    here = _pick(got, path)
    if not isinstance(month, dict):
        return ""
    try:
        if path.endswith(".blended_per_m") and month.get("tokens") and here is not None:
            from_rounded = (Decimal(month["total"]) / month["tokens"] * 1_000_000).quantize(
                Decimal("0.0001"), rounding=ROUND_HALF_UP)
            if Decimal(here) == from_rounded:
                return ("blended_per_m is rounded from the exact total ÷ tokens, not computed "
                        "from the rounded total")
        if (path.endswith(".untagged_ok") and month.get("untagged_share") is not None
                and here is (Decimal(month["untagged_share"]) <= Decimal("0.10"))):
            return ("the check compares the exact dollars (untagged ≤ 10% × total), not the "
                    "share rounded to 4 places")
        if (path.endswith(".untagged_ok") and month.get("untagged") is not None
                and here is (Decimal(month["untagged"]) <= Decimal("0.10")
                             * Decimal(month["total"]))):
            return ("the check compares the exact dollars (untagged ≤ 10% × total), not "
                    "amounts rounded to the cent")
    except (InvalidOperation, TypeError, ValueError):
        return ""
    return ""


def check(case: Case, got: Any, expected: Any) -> Verdict:
    fn = case.params["function"]
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), but "
                              f"returned a result")
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              "valid")
    want = _graded(expected["value"], case.level, fn)
    value = _graded(got["value"], case.level, fn)
    try:
        _same(fn, want, value)
    except Mismatch as miss:
        if fn == "bill_request":
            why = _request_diagnosis(case, miss.path, _pick(value, miss.path))
        else:
            why = _diagnose(case, miss.path, value, want)
            why = why or _figure_hint(miss.path, value, want) or case.params.get("hint", "")
        return Verdict(False, str(miss) + (f" — {why}" if why else ""))
    return Verdict(True)
