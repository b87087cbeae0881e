"""A meter solution written independently of the reference, with switchable mistakes; each
broken module turns one on (the mistakes candidates make when they build a billing pipeline).
With no flag set it passes every level (tests/meter/test_meter_teeth.py checks that)."""

import copy
from collections import deque
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

WINDOW = 10_000


def make(float_money=False, cached_free=False, half_even=False, round_each_event=False,
         blended_fresh_only=False, retry_once=False, dup_twice=False, received_month=False,
         retry_share_swapped=False, untagged_ge=False, empty_tag_tenant=False,
         chargeback_full=False, list_everything=False, unbounded_seen=False, slow=False,
         untagged_rounded_share=False, empty_owner=False, half_up_floor=False,
         sum_rounded_lines=False, blended_rounded_total=False, window_short=False,
         transfer_before_dedup=False, retry_first_month=False, discount_at_fraction=False,
         reader_raw_tag=False, retry_by_arrival=False, dup_key_tenant=False,
         window_1000=False, untagged_cents=False, marks_billed=False, window_scan=False):
    mode = ROUND_HALF_EVEN if half_even else ROUND_HALF_UP

    def q(x, step="0.01"):
        if x is None:
            return None
        if float_money:
            return Decimal(repr(round(float(x), len(step) - 2)))
        if half_up_floor:  # floor(x / step + 1/2) * step: "half up" toward +infinity
            unit = Decimal(step)
            return ((Decimal(x) / unit + Decimal("0.5")).to_integral_value(ROUND_FLOOR)
                    * unit).quantize(unit)
        return Decimal(x).quantize(Decimal(step), rounding=mode)

    def num(s):
        return float(s) if float_money else Decimal(s)

    def rates(prices):
        return ({t: (num(r["in"]), num(r["out"])) for t, r in prices["tiers"].items()},
                num(prices["cached_fraction"]))

    def cost(event, tiers, frac):
        if event["tier"] not in tiers:
            raise ValueError(f"unknown tier {event['tier']}")
        if event["cached_tokens"] > event["prompt_tokens"]:
            raise ValueError("cached_tokens > prompt_tokens")
        rin, rout = tiers[event["tier"]]
        cached = event["cached_tokens"]
        fresh = event["prompt_tokens"] - cached
        cf = 0 if cached_free else frac
        f = fresh * rin / 1_000_000
        c = cached * rin * cf / 1_000_000
        o = event["output_tokens"] * rout / 1_000_000
        d = cached * rin * (frac if discount_at_fraction else 1 - frac) / 1_000_000
        if round_each_event:
            f, c, o, d = q(f), q(c), q(o), q(d)
        return f, c, o, d

    def bill_request(event, prices):
        tiers, frac = rates(prices)
        f, c, o, d = cost(event, tiers, frac)
        if marks_billed:  # "processed" flag on the caller's event
            event["billed"] = True
        return {"fresh_input": f, "cached_input": c, "output": o, "cached_discount": d,
                "total": f + c + o}

    def tag(x):
        if empty_tag_tenant:
            return x
        return x or None

    def ledger(events, prices):
        tiers, frac = rates(prices)
        zero = num("0")
        if list_everything:
            events = list(events)
        seen, window = set(), deque()
        recent = deque(maxlen=WINDOW)  # window_scan: the last WINDOW first deliveries
        months = {}
        first_month = {}
        span = WINDOW - 1 if window_short else 1000 if window_1000 else WINDOW
        arrived = set()

        def month_of(e):
            ts = e["received_ts"] if received_month else e["ts"]
            month = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")
            if retry_first_month:
                if e["attempt"] == 1:
                    first_month[e["request_id"]] = month
                return first_month.get(e["request_id"], month)
            return month

        def transfer(m, e, tenant):
            owner = e.get("prefix_owner") if empty_owner else tag(e.get("prefix_owner"))
            if e["cached_tokens"] and owner is not None and owner != tenant:
                rin = tiers[e["tier"]][0]
                moved = e["cached_tokens"] * rin * (1 - frac) / 1_000_000
                if not chargeback_full:
                    moved = moved / 2
                m["transfer"][tenant] = m["transfer"].get(tenant, zero) + moved
                m["transfer"][owner] = m["transfer"].get(owner, zero) - moved

        def month_entry(month):
            return months.setdefault(month, {"tiers": {}, "tokens": 0, "fresh_tokens": 0,
                                             "first": zero, "retries": zero, "tenants": {},
                                             "untagged": zero, "transfer": {}})
        for i, e in enumerate(events):
            if slow:  # a defensive deep copy per event, three times over
                for _ in range(3):
                    e = copy.deepcopy(e)
            key = e["request_id"] if retry_once else (e["request_id"], e["attempt"])
            if dup_key_tenant:
                key = (*key, e.get("tenant"))
            if transfer_before_dedup:  # the chargeback pass sees every delivery
                transfer(month_entry(month_of(e)), e, tag(e.get("tenant")))
            if window_scan:  # the recent keys in a deque searched one by one, not a set
                if key in recent:
                    continue
                recent.append(key)
            elif not dup_twice:
                if not unbounded_seen:
                    while window and window[0][0] <= i - span:
                        seen.discard(window.popleft()[1])
                if key in seen:
                    continue
                seen.add(key)
                if not unbounded_seen:
                    window.append((i, key))
            f, c, o, d = cost(e, tiers, frac)
            if marks_billed:
                e["billed"] = True
            m = month_entry(month_of(e))
            t = m["tiers"].setdefault(e["tier"], [zero] * 4)
            for j, x in enumerate((f, c, o, d)):
                t[j] += x
            spent = f + c + o
            if retry_by_arrival:  # the first delivery of a request id is its first attempt
                first = e["request_id"] not in arrived
                arrived.add(e["request_id"])
            else:
                first = e["attempt"] == 1
            m["first" if first else "retries"] += spent
            m["tokens"] += e["prompt_tokens"] + e["output_tokens"]
            m["fresh_tokens"] += e["prompt_tokens"] - e["cached_tokens"] + e["output_tokens"]
            tenant = tag(e.get("tenant"))
            if tenant is None:
                m["untagged"] += spent
            else:
                m["tenants"][tenant] = m["tenants"].get(tenant, zero) + spent
            if not transfer_before_dedup:
                transfer(m, e, e.get("tenant") if reader_raw_tag else tenant)
        out = {}
        for month, m in sorted(months.items()):
            total = m["first"] + m["retries"]
            moved_tokens = m["fresh_tokens"] if blended_fresh_only else m["tokens"]
            inc = m["retries"] / m["first"] if m["first"] else None
            shr = m["retries"] / total if total else None
            if retry_share_swapped:
                inc, shr = shr, inc
            charge = {k: v + m["transfer"].get(k, zero) for k, v in m["tenants"].items()}
            for k, v in m["transfer"].items():
                if k is not None and k not in charge:
                    charge[k] = v
            limit = num("0.10") * total
            ok = not (m["untagged"] >= limit and total) if untagged_ge else m["untagged"] <= limit
            if untagged_cents:  # the check on amounts rounded to the cent
                ok = q(m["untagged"]) <= num("0.10") * q(total)
            if untagged_rounded_share:  # the check on the reported (4-place) share
                ok = not total or q(m["untagged"] / total, "0.0001") <= num("0.10")
            lines = {t: (q(f), q(c), q(o), q(d)) for t, (f, c, o, d) in m["tiers"].items()}
            if sum_rounded_lines:  # totals added up from the rounded lines
                tier_total = {t: f + c + o for t, (f, c, o, d) in lines.items()}
                month_total = sum(tier_total.values(), zero)
            else:
                tier_total = {t: q(f + c + o) for t, (f, c, o, d) in m["tiers"].items()}
                month_total = q(total)
            blended = (q(total) if blended_rounded_total else total)
            out[month] = {
                "tiers": {t: {"fresh_input": f, "cached_input": c, "output": o,
                              "cached_discount": d, "total": tier_total[t]}
                          for t, (f, c, o, d) in lines.items()},
                "total": month_total, "tokens": m["tokens"],
                "blended_per_m": q(blended / moved_tokens * 1_000_000, "0.0001")
                if moved_tokens else None,
                "first_attempts": q(m["first"]), "retries": q(m["retries"]),
                "retry_spend_increase": q(inc, "0.0001"), "retry_share_of_bill": q(shr, "0.0001"),
                "tenants": {k: q(v) for k, v in m["tenants"].items()},
                "untagged": q(m["untagged"]),
                "untagged_share": q(m["untagged"] / total, "0.0001") if total else None,
                "untagged_ok": bool(ok),
                "chargeback": {k: q(v) for k, v in charge.items()},
                "chargeback_untagged": q(m["untagged"] + m["transfer"].get(None, zero)),
            }
        return {"months": out}

    return bill_request, ledger
