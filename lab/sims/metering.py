"""Metering and cost attribution: one month's API bill for one product, line by line.

Prices are per 1M tokens. Cached prompt tokens bill at 10% of the input rate. A retry re-bills
the whole request once, so a retry rate r raises spend by r and retries are r/(1+r) of the final
bill. Untagged spend is measured in dollars, because a request type that is a sliver of the
traffic can be half the bill.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from lab.reference import meter as bill
from lab.sims.base import (
    Check,
    InputSpec,
    Output,
    Preset,
    Sim,
    SimInputError,
    SimResult,
    Value,
    at_most,
    money,
    num,
    pct,
    points,
)

M = 1e6
CACHED_RATE = 0.10  # a cached prompt token costs 10% of a fresh one
TIERS: dict[str, tuple[float, float]] = {  # $ per 1M tokens in, out
    "fast": (0.80, 4.00),
    "flagship": (3.00, 15.00),
    "frontier": (15.00, 75.00),
}
# Request shapes (tokens in, tokens out) from the serving-facts note.
REQUEST_TYPES: dict[str, tuple[str, int, int]] = {
    "chat": ("Chat", 800, 300),
    "copilot": ("Copilot", 2400, 600),
    "agent": ("Research agent", 12000, 4000),
}


def _volume(key: str, default: int) -> InputSpec:
    label, tin, tout = REQUEST_TYPES[key]
    return InputSpec(f"{key}_requests", f"{label} requests", "req/month", default, "int",
                     0, 10_000_000_000, 10_000,
                     help=f"{label} requests this month ({tin:,} in / {tout:,} out tokens each).")


def _tagged(key: str, default: float) -> InputSpec:
    label = REQUEST_TYPES[key][0]
    return InputSpec(f"{key}_tagged", f"{label} tagged", "of its spend", default, "float",
                     0, 1, 0.05, percent=True,
                     help=f"Share of {label.lower()} spend tagged to a named owner.")


class MeteringSim(Sim):
    name = "metering"
    title = "Metering and cost attribution"
    summary = "One month's bill by line: caching, retries, blended price, and who owns the spend."
    inputs = (
        _volume("chat", 1_000_000),
        _volume("copilot", 200_000),
        _volume("agent", 50_000),
        InputSpec("tier", "Price tier", "", "flagship", "choice", choices=tuple(TIERS),
                  help="Per 1M in/out: fast $0.80/$4, flagship $3/$15, frontier $15/$75."),
        InputSpec("cached_share", "Cached prompt share", "of prompt tokens", 0.3, "float",
                  0, 1, 0.05, percent=True,
                  help="Prompt tokens read from the cache, billed at 10% of the input rate."),
        InputSpec("retry_rate", "Retry rate", "of requests", 0.05, "float", 0, 1, 0.01,
                  percent=True, help="Requests re-billed once in full (one retry each)."),
        _tagged("chat", 0.98),
        _tagged("copilot", 0.95),
        _tagged("agent", 0.9),
        InputSpec("budget", "Budget", "$/month", 15_000.0, "float", 0, 1e12, 500,
                  help="What the month may cost."),
        InputSpec("max_untagged", "Untagged limit", "of dollars", 0.10, "float", 0, 1, 0.01,
                  percent=True, help="Check: untagged spend at most this share of dollars."),
    )
    presets = {
        "agents-in-the-dark": Preset(
            "agents-in-the-dark", "Agents in the dark",
            "Only 40% of research-agent spend is tagged. By requests just 4.8% is untagged; by "
            "dollars it is over 20%. Fails the untagged check; fix: turn agent_tagged to 90%.",
            {"agent_tagged": 0.4}, about_check="untagged", fix={"agent_tagged": 0.9},
        ),
        "retry-storm": Preset(
            "retry-storm", "Retry storm",
            "A flaky client re-sends 20% of requests: spend rises 20% and retries are 1/6 of the "
            "bill. Fails the budget; fix: bring retry_rate down to 5%.",
            {"retry_rate": 0.2}, about_check="budget", fix={"retry_rate": 0.05},
        ),
        "cold-cache": Preset(
            "cold-cache", "Cold cache",
            "The prompt prefix changes every request, so nothing is read from the cache. Fails "
            "the budget; fix: turn cached_share back to 30%.",
            {"cached_share": 0.0}, about_check="budget", fix={"cached_share": 0.3},
        ),
    }

    def _cross_check(self, values: Mapping[str, Value]) -> None:
        if not any(int(values[f"{key}_requests"]) for key in REQUEST_TYPES):
            raise SimInputError("every request volume is 0: there is nothing to bill")

    def _compute(self, v: Mapping[str, Value]) -> SimResult:
        tier = str(v["tier"])
        rate_in, rate_out = TIERS[tier]
        cached, retry = float(v["cached_share"]), float(v["retry_rate"])
        f: list[str] = [
            f"Tier {tier}: ${num(rate_in)} per 1M in, ${num(rate_out)} per 1M out; cached prompt "
            f"tokens at 10% = ${num(rate_in * CACHED_RATE)} per 1M"
        ]
        out: list[Output] = []
        counts = {key: int(v[f"{key}_requests"]) for key in REQUEST_TYPES}
        tokens_in, tokens_out = _tokens(counts, f)

        fresh, cached_cost, output = bill.line_costs(
            tokens_in * (1 - cached), tokens_in * cached, float(tokens_out), rate_in, rate_out,
            CACHED_RATE)
        first = fresh + cached_cost + output
        retries = retry * first  # each retried request is re-billed once, in full
        total = first + retries
        increase, retry_share = bill.retry_tax(first, retries)
        f += [
            f"Fresh input = {num(tokens_in / M)}M × {pct(1 - cached)} × ${num(rate_in)} = "
            f"{money(fresh)}",
            f"Cached input = {num(tokens_in / M)}M × {pct(cached)} × ${num(rate_in * CACHED_RATE)}"
            f" = {money(cached_cost)}",
            f"Output = {num(tokens_out / M)}M × ${num(rate_out)} = {money(output)}",
            f"Retries = {pct(retry)} × {money(first)} first attempts = {money(retries)}",
            f"Bill = {money(fresh)} + {money(cached_cost)} + {money(output)} + {money(retries)}"
            f" = {money(total)}",
            f"Retries raise spend by {pct(retry)}; they are {pct(retry)} ÷ {pct(1 + retry)} = "
            f"{pct(retry / (1 + retry))} of the final bill",
        ]
        saved = bill.cached_discount(tokens_in * cached, rate_in, CACHED_RATE) * (1 + retry)
        f.append(
            f"Saved by caching = {num(tokens_in / M)}M × {pct(cached)} × ${num(rate_in)} × 90% × "
            f"{num(1 + retry)} (retries) = {money(saved)}"
        )
        moved = (tokens_in + tokens_out) * (1 + retry)
        blended = bill.blended_per_m(total, moved) or 0.0
        f.append(
            f"Blended = {money(total)} ÷ ({num((tokens_in + tokens_out) / M)}M × {num(1 + retry)}"
            f" = {num(moved / M)}M tokens moved) = ${num(blended)} per 1M"
        )
        out += [
            Output("fresh_input", "Fresh input", fresh, "$", money(fresh)),
            Output("cached_input", "Cached input", cached_cost, "$", money(cached_cost)),
            Output("output", "Output", output, "$", money(output)),
            Output("retries", "Retries", retries, "$", money(retries)),
            Output("total", "Bill", total, "$", money(total)),
            Output("saved", "Saved by caching", saved, "$", money(saved)),
            Output("retry_spend_increase", "Spend added by retries", increase, "fraction",
                   f"+{pct(increase or 0.0)}"),
            Output("retry_share_of_bill", "Retries' share of the bill", retry_share,
                   "fraction", pct(retry_share or 0.0)),
            Output("tokens_moved", "Tokens moved", moved, "tokens", f"{num(moved / M)}M"),
            Output("blended_per_m", "Blended price", blended, "$/1M", f"${num(blended)} per 1M"),
        ]
        untagged, untagged_requests = _per_type(v, counts, total, f, out)
        checks = _untagged_and_budget(v, counts, total, untagged, untagged_requests, f, out)
        return SimResult(self.name, dict(v), out, f, checks)


def _tokens(counts: dict[str, int], f: list[str]) -> tuple[int, int]:
    """Prompt and output tokens over every request type (their formulas appended)."""
    tokens_in = sum(counts[k] * REQUEST_TYPES[k][1] for k in REQUEST_TYPES)
    tokens_out = sum(counts[k] * REQUEST_TYPES[k][2] for k in REQUEST_TYPES)
    in_terms = " + ".join(f"{counts[k]:,} × {REQUEST_TYPES[k][1]:,}" for k in REQUEST_TYPES)
    out_terms = " + ".join(f"{counts[k]:,} × {REQUEST_TYPES[k][2]:,}" for k in REQUEST_TYPES)
    f.append(f"Prompt tokens = {in_terms} = {num(tokens_in / M)}M")
    f.append(f"Output tokens = {out_terms} = {num(tokens_out / M)}M")
    return tokens_in, tokens_out


def _per_type(v: Mapping[str, Value], counts: dict[str, int], total: float, f: list[str],
              out: list[Output]) -> tuple[float, float]:
    """Each request type's cost per request and spend (formulas and outputs appended); returns
    the untagged spend and the untagged request count."""
    tier = str(v["tier"])
    rate_in, rate_out = TIERS[tier]
    cached, retry = float(v["cached_share"]), float(v["retry_rate"])
    untagged = 0.0
    untagged_requests = 0.0
    for key, (label, tin, tout) in REQUEST_TYPES.items():
        per_first = sum(bill.line_costs(tin * (1 - cached), tin * cached, float(tout),
                                        rate_in, rate_out, CACHED_RATE))
        per_request = per_first * (1 + retry)
        spend = per_request * counts[key]
        tagged = float(v[f"{key}_tagged"])
        untagged += spend * (1 - tagged)
        untagged_requests += counts[key] * (1 - tagged)
        f.append(
            f"{label} per request = ({tin:,} × ({pct(1 - cached)} + {pct(cached)} × 10%) × "
            f"${num(rate_in)} + {tout:,} × ${num(rate_out)}) ÷ 1M × {num(1 + retry)} = "
            f"${num(per_request)}; × {counts[key]:,} = {money(spend)}"
            f" ({pct(spend / total)} of the bill)"
        )
        out += [
            Output(f"{key}_per_request", f"{label} cost per request", per_request, "$",
                   f"${num(per_request)}"),
            Output(f"{key}_spend", f"{label} spend", spend, "$",
                   f"{money(spend)} ({pct(spend / total)})"),
        ]
    return untagged, untagged_requests


def _untagged_and_budget(v: Mapping[str, Value], counts: dict[str, int], total: float,
                         untagged: float, untagged_requests: float, f: list[str],
                         out: list[Output]) -> list[Check]:
    """The untagged shares and the budget (formulas and outputs appended), and the checks."""
    total_requests = sum(counts.values())
    untagged_share = bill.share(untagged, total) or 0.0
    untagged_req_share = untagged_requests / total_requests
    f.append(
        f"Untagged = Σ spend × (1 − tagged) = {money(untagged)} = {pct(untagged_share)} of "
        f"dollars (but {pct(untagged_req_share)} of requests)"
    )
    budget = float(v["budget"])
    used = total / budget if budget > 0 and math.isfinite(total / budget) else None
    f.append(f"Budget {money(budget)} − bill {money(total)} = {money(budget - total)}")
    out += [
        Output("untagged", "Untagged spend", untagged, "$", money(untagged)),
        Output("untagged_share", "Untagged share of dollars", untagged_share, "fraction",
               pct(untagged_share)),
        Output("untagged_request_share", "Untagged share of requests", untagged_req_share,
               "fraction", pct(untagged_req_share)),
        Output("budget_left", "Budget left", budget - total, "$", money(budget - total)),
        Output("budget_used", "Budget used", used, "fraction",
               pct(used) if used is not None else "no budget"),
    ]
    limit = float(v["max_untagged"])
    checks = [
        at_most("untagged", f"Untagged spend ≤ {pct(limit)} of dollars",
                untagged_share, limit, pct, points),
        at_most("budget", f"Bill within the {money(budget)} budget", total, budget, money),
    ]
    return checks
