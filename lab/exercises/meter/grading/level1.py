"""meter level 1: price one request and one month exactly (Decimal, rounded once, half up).

Boundaries covered (ids in brackets): 0 events [no-events]; an event of 0 tokens [zero-tokens];
every prompt token cached [all-cached]; half-cent ties that float arithmetic and round-half-even
get wrong [half-cent-tie-*]; sub-cent events that per-event rounding loses [sub-cent-events]; an
unknown tier and cached > prompt raise ValueError [unknown-tier, cached-over-prompt]; one request
billed exactly (the topic's worked example) [request-*].
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.meter.grading.common import JAN, PRICES, ev, ledger, request
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _fixed() -> list[Case]:
    copilot = ev("c1", 2400, 600)
    many_small = [ev(f"s{i}", 1333, 0, tier="fast") for i in range(9)]  # $0.0010664 each
    return [
        request(1, "request-uncached", "copilot request 2,400 in / 600 out, flagship", copilot),
        request(1, "request-cached-prefix", "the same request with a 2,000-token cached prefix",
                ev("c2", 2400, 600, 2000)),
        request(1, "request-zero-tokens", "a request of 0 tokens costs $0", ev("z", 0, 0)),
        request(1, "request-unknown-tier", "tier 'turbo' is not on the price sheet",
                ev("t", 10, 10, tier="turbo")),
        ledger(1, "no-events", "no events: no months", []),
        ledger(1, "zero-tokens", "one event of 0 tokens: $0.00 and no blended rate",
               [ev("z", 0, 0)]),
        ledger(1, "one-request", "one copilot request with a cached prefix",
               [ev("c2", 2400, 600, 2000)]),
        ledger(1, "all-cached", "every prompt token read from the cache",
               [ev("a1", 100_000, 0, 100_000, tier="frontier")]),
        ledger(1, "half-cent-tie-input", "5,000 fresh flagship tokens = $0.015 exactly",
               [ev("h1", 5000, 0)]),
        ledger(1, "half-cent-tie-even", "fast tier: 31,250 in = $0.025 and 11,250 out = $0.045, "
               "ties that round-half-even sends down",
               [ev("h2", 31_250, 11_250, tier="fast")]),
        ledger(1, "half-cent-tie-output", "frontier: 3,400 output tokens = $0.255",
               [ev("h4", 0, 3400, tier="frontier")]),
        ledger(1, "half-cent-tie-cached", "flagship: 50,000 cached tokens = $0.015",
               [ev("h5", 50_000, 0, 50_000)]),
        ledger(1, "sub-cent-events", "nine events of $0.0010664: $0.0096 in all, not 9 × $0.00",
               many_small),
        ledger(1, "three-tiers", "one request per tier",
               [ev("f", 800, 300, tier="fast"), ev("g", 2400, 600, 1200),
                 ev("x", 12_000, 4000, 8000, tier="frontier")]),
        ledger(1, "unknown-tier", "an event on a tier the price sheet lacks",
               [ev("ok", 10, 10), ev("bad", 10, 10, tier="turbo")]),
        ledger(1, "cached-over-prompt", "cached_tokens 600 > prompt_tokens 500",
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


def _hidden(seed: int) -> list[Case]:
    rng = random.Random(f"meter/1/{seed}")
    cases = []
    for i in range(8):
        event = _random_events(rng, 1)[0]
        cases.append(request(1, f"hidden-request-{i:02d}", "seeded request", event))
    for i in range(8):
        n = rng.choice([2, 10, 50, 300])
        cases.append(ledger(1, f"hidden-month-{i:02d}", f"seeded month of {n} events",
                            _random_events(rng, n)))
    return cases

