"""Buying the fleet: owned cards first, rented cards for the overflow, the API for the rest.

Owned cards are paid whether busy or idle; rented cards are rented by the card-hour for exactly
the overflow share they take (1.35× the owned card-month); whatever is left goes to the API at its
list price. A card-month is 730 hours, so tokens per card-month = tok/s × 3,600 × 730.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from lab.reference import fleet as plan
from lab.sims.base import (
    Check,
    InputSpec,
    Output,
    Preset,
    Sim,
    SimResult,
    Value,
    at_most,
    money,
    num,
    pct,
    points,
)

HOURS_PER_MONTH = plan.HOURS_PER_MONTH
B = 1e9
M = 1e6
# H100 tokens/s per GPU and API $ per 1M tokens, per model size (serving-facts scenario).
MODELS: dict[str, tuple[str, float, float]] = {
    "8b": ("8B chat", 10_000.0, 0.20),
    "70b": ("70B (fp8 or per GPU of a TP group)", 700.0, 2.50),
}
# Throughput relative to an H100, and the dial holding that card's owned card-month cost.
CARDS: dict[str, tuple[str, float, str]] = {
    "h100": ("H100", 1.0, "h100_cost"),
    "b200": ("B200", 2.4, "b200_cost"),
    "a100": ("used A100", 0.45, "a100_cost"),
}


def per_m(price: float) -> str:
    return f"${num(price)} per 1M"


class FleetSim(Sim):
    name = "fleet"
    title = "Buying the fleet"
    summary = "Owned, rented and API capacity for a month's demand: idle, blended $/1M, API share."
    inputs = (
        InputSpec("demand_btok", "Demand", "B tokens/month", 500.0, "float", 0.001, 1e7, 10,
                  help="Tokens to serve this month, in billions."),
        InputSpec("model", "Model", "", "8b", "choice", choices=tuple(MODELS),
                  help="8b: H100 ≈ 10,000 tok/s, API $0.20/1M; 70b: ≈ 700 tok/s/GPU, $2.50/1M."),
        InputSpec("card", "Card", "", "h100", "choice", choices=tuple(CARDS),
                  help="h100 = 1.0×, b200 = 2.4×, a100 (used) = 0.45× an H100's tokens/s."),
        InputSpec("owned_cards", "Owned cards", "cards", 18, "int", 0, 10_000_000, 1,
                  help="Cards bought: paid every month, busy or idle; they serve first."),
        InputSpec("rented_share", "Rented share of overflow", "of overflow", 1.0, "float",
                  0, 1, 0.05, percent=True,
                  help="Share of demand beyond owned capacity served by rented cards, rented by "
                       "the card-hour; the rest goes to the API."),
        InputSpec("h100_cost", "H100 card-month", "$", 2500.0, "float", 100, 100_000, 100,
                  help="Owned H100 all-in per month (scenario range $2,100–2,900)."),
        InputSpec("b200_cost", "B200 card-month", "$", 6000.0, "float", 100, 100_000, 100,
                  help="Owned B200 all-in per month."),
        InputSpec("a100_cost", "Used A100 card-month", "$", 1600.0, "float", 100, 100_000, 100,
                  help="Owned used A100 all-in per month (power and hosting do not get cheaper)."),
        InputSpec("rent_premium", "Rent premium", "× owned", 1.35, "float", 1, 10, 0.05,
                  help="A rented card-month costs this many owned card-months."),
        InputSpec("max_idle", "Idle limit", "of owned capacity", 0.15, "float", 0, 1, 0.01,
                  percent=True, help="Check: idle owned capacity at most this share."),
        InputSpec("max_cost_vs_api", "Cost limit", "of API price", 0.75, "float", 0, 10, 0.05,
                  percent=True, help="Check: blended $/1M at most this share of the API price."),
        InputSpec("max_api_share", "API overflow limit", "of tokens", 0.10, "float", 0, 1, 0.01,
                  percent=True, help="Check: API overflow at most this share of tokens."),
    )
    presets = {
        "used-chip-bargain": Preset(
            "used-chip-bargain", "The used-chip bargain",
            "19 used A100s at $1,600 a month: cheap per card, but at 0.45× an H100 they cost "
            "more per token and push the rest onto 1.35× rented A100s. Fails blended cost; "
            "fix: turn card to h100 (the same 19 cards then cover the demand).",
            {"model": "8b", "card": "a100", "owned_cards": 19, "demand_btok": 500.0,
             "rented_share": 1.0},
            about_check="blended", fix={"card": "h100"},
        ),
        "shiny-chip-bet": Preset(
            "shiny-chip-bet", "The shiny-chip bet",
            "40 B200s bought for a 70B demand forecast that has not arrived: 100B tokens fill "
            "barely half of them. Fails idle; fix: turn owned_cards down to 22 and rent the rest.",
            {"model": "70b", "card": "b200", "owned_cards": 40, "demand_btok": 100.0,
             "rented_share": 1.0},
            about_check="idle", fix={"owned_cards": 22},
        ),
        "api-tax": Preset(
            "api-tax", "The API tax",
            "20 H100s for 100B 70B tokens and no rented capacity: the overflow goes to the API at "
            "$2.50 and swallows the month. Fails API share; fix: turn rented_share up to 100%.",
            {"model": "70b", "card": "h100", "owned_cards": 20, "demand_btok": 100.0,
             "rented_share": 0.0},
            about_check="api_share", fix={"rented_share": 1.0},
        ),
    }

    def _compute(self, v: Mapping[str, Value]) -> SimResult:
        model_label, h100_tps, api_price = MODELS[str(v["model"])]
        card_label, speed, cost_key = CARDS[str(v["card"])]
        card_cost = float(v[cost_key])
        premium = float(v["rent_premium"])
        demand = float(v["demand_btok"]) * B
        owned = int(v["owned_cards"])
        rented_share = float(v["rented_share"])
        f: list[str] = []
        out: list[Output] = []

        tps = h100_tps * speed
        month, rented_exact = _month(v, tps, card_cost, premium, api_price, demand, owned,
                                     rented_share)
        per_card = month["tokens_per_card_month"]
        f.append(
            f"{card_label} on {model_label}: {num(h100_tps)} tok/s × {num(speed)} = "
            f"{num(tps)} tok/s × 3,600 s × 730 h = {num(per_card / B)}B tokens per card-month"
        )
        needed = demand / per_card
        f.append(f"Cards needed = {num(demand / B)}B ÷ {num(per_card / B)}B = {num(needed)} → "
                 f"{month['cards_needed']} cards")
        owned_cap, owned_served = month["owned_capacity"], month["owned_tokens"]
        idle = owned_cap - owned_served
        idle_share = month["idle_share"]
        f.append(
            f"Owned capacity = {owned} × {num(per_card / B)}B = {num(owned_cap / B)}B; serves "
            f"{num(owned_served / B)}B, idle {num(idle / B)}B = {pct(idle_share)}"
            + ("" if owned_cap else " (no owned cards)")
        )
        overflow = demand - owned_served
        rented_served, api_tokens = month["rented_tokens"], month["api_tokens"]
        rented_months = float(rented_exact)
        f.append(
            f"Overflow = {num(demand / B)}B − {num(owned_served / B)}B = {num(overflow / B)}B: "
            f"rented {pct(rented_share)} = {num(rented_served / B)}B "
            f"({num(rented_months)} card-months), API {num(api_tokens / B)}B"
        )
        owned_cost, rented_cost, api_cost = (month["owned_cost"], month["rented_cost"],
                                             month["api_cost"])
        total, blended = month["total_cost"], month["blended_per_m"]
        all_api = demand / M * api_price
        f += [
            f"Owned = {owned} × {money(card_cost)} = {money(owned_cost)}",
            f"Rented = {num(rented_months)} card-months × {money(card_cost)} × {num(premium)} = "
            f"{money(rented_cost)}",
            f"API = {num(api_tokens / M)}M tokens × ${num(api_price)} per 1M = {money(api_cost)}",
            f"Blended = {money(total)} ÷ {num(demand / M)}M tokens = ${num(blended)} per 1M "
            f"= {pct(blended / api_price)} of the API's ${num(api_price)} (all-API month: "
            f"{money(all_api)})",
        ]
        capacity = owned_cap + rented_served
        utilisation = (owned_served + rented_served) / capacity if capacity else 0.0
        api_share = month["api_share"]
        out += _outputs(month, tps, needed, capacity, utilisation, rented_months, api_price)
        checks = _checks(v, month["checks"], blended, api_price, idle_share, api_share)
        return SimResult(self.name, dict(v), out, f, checks)


def _month(v: Mapping[str, Value], tps: float, card_cost: float, premium: float,
           api_price: float, demand: float, owned: int,
           rented_share: float) -> tuple[dict[str, Any], Fraction]:
    """The month's figures as the fleet lab's plan computes them (floats; its check verdicts
    under "checks"), and the rented card-months, exact: the sim rents by the card-hour,
    exactly the rented share of the overflow."""
    scenario = plan.Scenario({
        "tokens_per_second": tps, "card_month_cost": card_cost, "rent_premium": premium,
        "api_price_per_m": api_price, "max_idle": float(v["max_idle"]),
        "max_cost_vs_api": float(v["max_cost_vs_api"]),
        "max_api_share": float(v["max_api_share"]),
    })
    exact_demand = Fraction(demand)
    overflow_exact = max(Fraction(0), exact_demand - owned * scenario.per_card)
    rented_exact = overflow_exact * Fraction(rented_share) / scenario.per_card
    figures = plan.evaluate(scenario, exact_demand, owned, rented_exact)
    month = {k: (float(x) if isinstance(x, Fraction) else x) for k, x in figures.items()}
    return month, rented_exact


def _outputs(month: dict[str, Any], tps: float, needed: float, capacity: float,
             utilisation: float, rented_months: float, api_price: float) -> list[Output]:
    """Every output of the month."""
    per_card, owned_cap, idle_share = (month["tokens_per_card_month"], month["owned_capacity"],
                                       month["idle_share"])
    api_tokens, api_share = month["api_tokens"], month["api_share"]
    owned_cost, rented_cost, api_cost = (month["owned_cost"], month["rented_cost"],
                                         month["api_cost"])
    total, blended = month["total_cost"], month["blended_per_m"]
    return [
        Output("card_tps", "Tokens/s per card", tps, "tok/s", f"{num(tps)} tok/s"),
        Output("tokens_per_card_month", "Tokens per card-month", per_card / B, "B tokens",
               f"{num(per_card / B)}B"),
        Output("cards_needed", "Cards needed", needed, "cards",
               f"{num(needed)} ({month['cards_needed']} whole cards)"),
        Output("owned_capacity", "Owned capacity", owned_cap / B, "B tokens",
               f"{num(owned_cap / B)}B"),
        Output("capacity", "Capacity (owned + rented)", capacity / B, "B tokens",
               f"{num(capacity / B)}B"),
        Output("owned_utilisation", "Owned utilisation", 1 - idle_share if owned_cap else None,
               "fraction", pct(1 - idle_share) if owned_cap else "no owned cards"),
        Output("utilisation", "Utilisation (owned + rented)", utilisation, "fraction",
               pct(utilisation)),
        Output("idle_share", "Idle share of owned capacity", idle_share, "fraction",
               pct(idle_share)),
        Output("rented_card_months", "Rented card-months", rented_months, "card-months",
               num(rented_months)),
        Output("api_tokens", "API overflow", api_tokens / B, "B tokens",
               f"{num(api_tokens / B)}B"),
        Output("api_share", "API share of tokens", api_share, "fraction", pct(api_share)),
        Output("owned_cost", "Owned cost", owned_cost, "$", money(owned_cost)),
        Output("rented_cost", "Rented cost", rented_cost, "$", money(rented_cost)),
        Output("api_cost", "API cost", api_cost, "$", money(api_cost)),
        Output("total_cost", "Month's cost", total, "$", money(total)),
        Output("blended_per_m", "Blended $/1M", blended, "$/1M", f"${num(blended)}"),
        Output("api_price", "API $/1M", api_price, "$/1M", f"${num(api_price)}"),
        Output("cost_vs_api", "Blended vs API", blended / api_price, "fraction",
               pct(blended / api_price)),
    ]


def _checks(v: Mapping[str, Value], verdicts: dict[str, dict[str, Any]], blended: float,
            api_price: float, idle_share: float, api_share: float) -> list[Check]:
    """The three checks, with the verdicts and margins the fleet lab grades."""
    max_idle, max_cost, max_api = (float(v["max_idle"]), float(v["max_cost_vs_api"]),
                                   float(v["max_api_share"]))
    shown = [
        at_most("idle", f"Idle ≤ {pct(max_idle)} of owned capacity",
                idle_share, max_idle, pct, points),
        at_most("blended", f"Blended cost ≤ {pct(max_cost)} of the API price",
                blended, api_price * max_cost, per_m),
        at_most("api_share", f"API overflow ≤ {pct(max_api)} of tokens",
                api_share, max_api, pct, points),
    ]
    # the verdicts and margins are the exact ones the fleet lab grades
    checks = [replace(c, passed=verdicts[c.name]["passed"],
                      margin=float(verdicts[c.name]["margin"])) for c in shown]
    return checks
