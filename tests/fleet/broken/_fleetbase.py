"""A fleet solution written independently of the reference, with switchable mistakes; each
broken module turns one on. With no flag set it passes every level."""

import math
from fractions import Fraction as F

CHECKS = ("idle", "blended", "api_share")


def make(cap_ignored=False, tie_least_api=False, start_at_one=False,
         idle_over_demand=False, rented_as_owned=False, floor_cards=False, strict_limit=False,
         no_premium=False, api_share_of_overflow=False, greedy=False, no_infeasible=False,
         always_blended=False, tie_most_owned=False, greedy_year=False, own_the_peak=False,
         no_api_for_remainder=False, float_math=False, api_share_dollars=False,
         blended_margin_ratio=False, rented_first=False, prorated_rent=False,
         max_rented_falsy=False, year_no_blended=False, no_rented_check=False,
         owned_below_need=False, hours_720=False, parses_in_place=False,
         displayed_shares=False):
    num = float if float_math else F

    def setup(sc):
        if parses_in_place:  # the scenario's numbers parsed into the caller's dict
            sc["card_month_cost"] = num(sc["card_month_cost"])
        per = num(sc["tokens_per_second"]) * 3600 * (720 if hours_720 else 730)
        rent = num(sc["card_month_cost"]) * (1 if no_premium else num(sc["rent_premium"]))
        return per, num(sc["card_month_cost"]), rent, num(sc["api_price_per_m"])

    def cap_of(sc):
        cap = sc.get("max_rented")
        return (cap or None) if max_rented_falsy else cap

    def month(sc, demand, owned, rented):
        if demand <= 0 or owned < 0 or (rented < 0 and not no_rented_check):
            raise ValueError("demand must be positive and card counts non-negative")
        per, own_cost, rent_cost, api = setup(sc)
        d = num(demand)
        ocap, rcap = owned * per, rented * per
        otok = min(d, ocap)
        rtok = min(d - otok, rcap)
        if rented_first:  # rented cards serve first, owned take the overflow
            rtok = min(d, rcap)
            otok = min(d - rtok, ocap)
        atok = d - otok - rtok
        if rented_as_owned:
            cap = ocap + rcap
            idle = (cap - otok - rtok) / cap if cap else F(0)
        elif idle_over_demand:
            idle = (ocap - otok) / d
        else:
            idle = (ocap - otok) / ocap if ocap else F(0)
        share = atok / (d - otok) if api_share_of_overflow and d > otok else atok / d
        if api_share_of_overflow and d == otok:
            share = F(0)
        rented_cost = rented * rent_cost
        if prorated_rent:  # pays rented cards for the tokens they carried only
            rented_cost = rtok / per * rent_cost
        total = owned * own_cost + rented_cost + atok * api / 1_000_000
        if api_share_dollars:  # the API's share of the bill, not of the tokens
            share = (atok * api / 1_000_000) / total if total else num(0)
        blended = total / d * 1_000_000
        margins = {"idle": num(sc["max_idle"]) - idle,
                   "blended": num(sc["max_cost_vs_api"]) * api - blended,
                   "api_share": num(sc["max_api_share"]) - share}
        if blended_margin_ratio:  # the margin as a ratio to the API price, not in $ per 1M
            margins["blended"] = num(sc["max_cost_vs_api"]) - blended / api
        cards = math.floor(d / per) if floor_cards else math.ceil(d / per)
        return {
            "tokens_per_card_month": per, "cards_needed": cards, "owned_capacity": ocap,
            "rented_capacity": rcap, "owned_tokens": otok, "rented_tokens": rtok,
            "api_tokens": atok, "idle_share": idle, "api_share": share,
            "owned_cost": owned * own_cost, "rented_cost": rented_cost,
            "api_cost": atok * api / 1_000_000, "total_cost": total, "blended_per_m": blended,
            "cost_vs_api": blended / api,
            "checks": {k: {"passed": (m > 0 if strict_limit else
                                      round(m, 6) >= 0 if displayed_shares and k != "idle"
                                      else m >= 0), "margin": m}
                       for k, m in margins.items()},
        }

    def evaluate_plan(scenario, demand, plan):
        return month(scenario, demand, plan["owned"], plan["rented"])

    def ok(sc, d, owned, rented, skip=(), figures=None):
        cap = None if cap_ignored else cap_of(sc)
        if cap is not None and rented > cap:
            return False
        checks = (figures or month(sc, d, owned, rented))["checks"]
        return all(c["passed"] for k, c in checks.items() if k not in skip)

    def options(sc, d, owned):
        per = setup(sc)[0]
        over = max(F(0), F(d) - owned * per)
        hi = math.ceil(over / per)
        return range(hi, hi + 1) if no_api_for_remainder else range(hi + 1)

    def cheapest_plan(scenario, demand):
        per = setup(scenario)[0]
        need = math.ceil(F(demand) / per)
        if greedy:
            owned = math.floor(F(demand) / per)
            return {"owned": owned, "rented": need - owned}
        best, capacity_ok = None, False
        spare = 1 - F(scenario["max_idle"])  # more owned cards than this fails the idle check
        most = need if spare <= 0 else min(need, max(math.floor(F(demand) / per),
                                                     math.floor(F(demand) / (per * spare))))
        for owned in range(1 if start_at_one else 0,
                           most if owned_below_need and most == need else most + 1):
            for rented in options(scenario, demand, owned):
                fig = month(scenario, demand, owned, rented)
                if ok(scenario, demand, owned, rented, ("blended",), fig):
                    capacity_ok = True
                if not ok(scenario, demand, owned, rented,
                          ("blended",) if no_infeasible else (), fig):
                    continue
                cost = fig["total_cost"]
                better = best is None or cost < best[0] or (
                    tie_most_owned and cost == best[0] and owned > best[1]) or (
                    tie_least_api and cost == best[0] and fig["api_share"] < best[3])
                if better:
                    best = (cost, owned, rented, fig["api_share"])
        if best is None:
            return {"infeasible": "blended" if capacity_ok or always_blended else "api_share"}
        return {"owned": best[1], "rented": best[2]}

    def plan_year(scenario, demand):
        per = setup(scenario)[0]
        if greedy_year or own_the_peak:
            pick = max if own_the_peak else min
            owned = (math.ceil if own_the_peak else math.floor)(F(pick(demand)) / per)
            rented = [max(0, math.ceil((F(d) - owned * per) / per)) for d in demand]
            return {"owned": owned, "rented": rented}
        best = None
        most = max(math.ceil(F(d) / per) for d in demand)
        spare = 1 - F(scenario["max_idle"])
        if spare > 0:  # the quietest month's idle check caps the owned cards
            most = min(most, *(max(math.floor(F(d) / per), math.floor(F(d) / (per * spare)))
                               for d in demand))
        for owned in range(most + 1):
            total, rented = F(0), []
            for d in demand:
                found = None
                # most rented first: fewer rented send more to the API, so once the API-share
                # check fails it fails for every smaller count (keeps the search well inside
                # the level's 5 s timeout on a loaded machine)
                for r in reversed(options(scenario, d, owned)):
                    fig = month(scenario, d, owned, r)
                    if not fig["checks"]["api_share"]["passed"]:
                        break
                    if ok(scenario, d, owned, r, ("blended",) if year_no_blended else (), fig):
                        cost = fig["total_cost"]
                        if found is None or cost <= found[0]:
                            found = (cost, r)
                if found is None:
                    break
                total += found[0]
                rented.append(found[1])
            else:
                if best is None or total < best[0]:
                    best = (total, owned, rented)
        if best is None:
            return {"infeasible": "year"}
        return {"owned": best[1], "rented": best[2]}

    return evaluate_plan, cheapest_plan, plan_year
