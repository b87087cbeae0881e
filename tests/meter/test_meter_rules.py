"""The meter's stated rules, pinned on hand-computed figures (reference, streams, checks)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from lab.exercises.meter import grading, streams
from lab.exercises.meter.grading import common
from lab.grader.api import Case
from lab.reference import meter

PRICES = common.PRICES


def test_bill_request_is_exact_and_matches_the_topic_example() -> None:
    # copilot 2,400 in / 600 out, 2,000 cached, flagship: (400 × 3 + 2,000 × 0.3 + 600 × 15) / 1e6
    bill = meter.bill_request(common.ev("c", 2400, 600, 2000), PRICES)
    assert bill["total"] == Decimal("0.0108")
    assert bill["cached_discount"] == Decimal("0.0054")  # 2,000 × 3 × 0.9 / 1e6


def test_round_once_half_up_from_the_exact_value() -> None:
    one = meter.ledger(iter([common.ev("h", 31_250, 11_250, tier="fast")]), PRICES)
    line = one["months"]["2026-01"]["tiers"]["fast"]
    assert line["fresh_input"] == Decimal("0.03")  # $0.025 exactly, half up
    assert line["output"] == Decimal("0.05")  # $0.045 exactly, half up
    assert one["months"]["2026-01"]["total"] == Decimal("0.07")
    nine = meter.ledger(iter([common.ev(f"s{i}", 1333, 0, tier="fast") for i in range(9)]),
                        PRICES)
    assert nine["months"]["2026-01"]["total"] == Decimal("0.01")  # 9 × $0.0010664, not 9 × 0


def test_retry_tax_twenty_percent_is_plus_20_and_one_sixth() -> None:
    case = next(c for c in grading.cases(2, 0) if c.id == "retry-tax-20pct")
    month = meter.ledger(iter(case.params["events"]), PRICES)["months"]["2026-01"]
    assert month["retry_spend_increase"] == Decimal("0.2000")
    assert month["retry_share_of_bill"] == Decimal("0.1667")


def test_untagged_boundary_is_strict() -> None:
    by_id = {c.id: c for c in grading.cases(3, 0)}
    at = meter.ledger(iter(by_id["untagged-exactly-10pct"].params["events"]), PRICES)
    over = meter.ledger(iter(by_id["untagged-just-over"].params["events"]), PRICES)
    assert at["months"]["2026-01"]["untagged_share"] == Decimal("0.1000")
    assert at["months"]["2026-01"]["untagged_ok"] is True
    assert over["months"]["2026-01"]["untagged_ok"] is False


def test_chargeback_moves_half_the_saving_and_keeps_the_total() -> None:
    by_id = {c.id: c for c in grading.cases(3, 0)}
    month = meter.ledger(iter(by_id["prefix-shared"].params["events"]), PRICES)["months"][
        "2026-01"]
    # ads read 10,000 of search's cached tokens: saving 10,000 × 3 × 0.9 / 1e6 = $0.027; half
    # = $0.0135 moves from ads to search. Bills: 2,000 × 3 + 10,000 × 0.3 + 500 × 15 = $0.0165.
    assert month["tenants"] == {"ads": Decimal("0.02"), "search": Decimal("0.02")}
    assert month["chargeback"] == {"ads": Decimal("0.03"), "search": Decimal("0.00")}
    assert month["total"] == Decimal("0.03")


def test_month_is_the_utc_month_of_ts() -> None:
    assert meter.month_of(common.FEB - 1) == "2026-01"
    assert meter.month_of(common.FEB) == "2026-02"
    assert meter.month_of(1835395200) == "2028-02"  # 29 February 2028


def test_streams_are_deterministic_and_keep_their_promises() -> None:
    spec = {"seed": 7, "n": 20_000, "dup": 0.05, "retry": 0.1, "late": 0.1, "far_dup": True}
    first = list(streams.events(spec))
    assert first == list(streams.events(spec)) and len(first) == 20_000
    delivered: dict[tuple[str, int], int] = {}
    content: dict[tuple[str, int], dict[str, object]] = {}
    far = 0
    for i, e in enumerate(first):
        key = (e["request_id"], e["attempt"])
        body = {k: v for k, v in e.items() if k != "received_ts"}
        if key in delivered:
            assert i - delivered[key] < streams.DEDUP_WINDOW
            assert content[key] == body  # a redelivery is the same event
            far = max(far, i - delivered[key])
        else:
            delivered[key], content[key] = i, body
        assert streams.MONTH_STARTS[0] <= e["ts"] <= e["received_ts"] < streams.MONTH_STARTS[2]
        assert 0 <= e["cached_tokens"] <= e["prompt_tokens"] <= 16_000
        assert 0 <= e["output_tokens"] <= 4_000
    assert far == streams.DEDUP_WINDOW - 1
    assert any(e["attempt"] > 1 for e in first)


@pytest.mark.slow
def test_cases_replay_per_seed_and_hidden_cases_change() -> None:
    assert grading.cases(2, 5) == grading.cases(2, 5)
    hidden = [c for c in grading.cases(3, 5) if c.id.startswith("hidden")]
    assert hidden != [c for c in grading.cases(3, 6) if c.id.startswith("hidden")]


def test_check_accepts_equal_decimals_and_refuses_floats() -> None:
    case = next(c for c in grading.cases(1, 0) if c.id == "one-request")
    want = {"value": {"months": {"2026-01": {"tiers": {}, "total": "1.50", "tokens": 3,
                                             "blended_per_m": None}}}}
    same = {"value": {"months": {"2026-01": {"tiers": {}, "total": "1.5", "tokens": 3,
                                             "blended_per_m": None}}}}
    assert grading.check(case, same, want).passed
    floated = {"value": {"months": {"2026-01": {"tiers": {}, "total": 1.5, "tokens": 3,
                                                "blended_per_m": None}}}}
    verdict = grading.check(case, floated, want)
    assert not verdict.passed and "never float" in verdict.message


def test_later_level_keys_are_not_graded_early() -> None:
    case = Case(id="x", level=1, params={"function": "ledger", "events": [], "prices": PRICES})
    want = {"value": {"months": {"2026-01": {"tiers": {}, "total": "1", "tokens": 1,
                                             "blended_per_m": "1", "untagged_ok": True}}}}
    got = {"value": {"months": {"2026-01": {"tiers": {}, "total": "1", "tokens": 1,
                                            "blended_per_m": "1", "untagged_ok": "?"}}}}
    assert grading.check(case, got, want).passed


def test_sims_use_the_reference_formulas() -> None:
    from lab.sims import SIMS

    r = SIMS["metering"].evaluate({"retry_rate": 0.2})
    first = r.value("total") - r.value("retries")
    increase, share = meter.retry_tax(first, r.value("retries"))
    assert r.value("retry_spend_increase") == increase
    assert r.value("retry_share_of_bill") == share
