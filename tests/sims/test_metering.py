"""Metering sim pinned on hand-computed bills (flagship $3/$15 per 1M unless stated)."""

from __future__ import annotations

import pytest

from lab.sims import SIMS

METER = SIMS["metering"]

# Defaults: 1,000,000 chat (800/300), 200,000 copilot (2,400/600), 50,000 agent (12,000/4,000)
# prompt tokens = 800M + 480M + 600M = 1,880M; output tokens = 300M + 120M + 200M = 620M


def test_default_bill_by_line() -> None:
    r = METER.evaluate()
    # 30% cached, 5% retries
    assert r.value("fresh_input") == pytest.approx(3948.00)  # 1,880 × 0.7 × 3
    assert r.value("cached_input") == pytest.approx(169.20)  # 1,880 × 0.3 × 0.30
    assert r.value("output") == pytest.approx(9300.00)  # 620 × 15
    assert r.value("retries") == pytest.approx(670.86)  # 0.05 × 13,417.20
    assert r.value("total") == pytest.approx(14088.06)  # 13,417.20 × 1.05
    # caching saved 1,880 × 0.3 × 3 × 0.9 × 1.05 = 1,598.94
    assert r.value("saved") == pytest.approx(1598.94)
    # blended: 14,088.06 / (2,500M × 1.05 = 2,625M) = $5.3669 per 1M
    assert r.value("tokens_moved") == pytest.approx(2625e6)
    assert r.value("blended_per_m") == pytest.approx(5.36688, abs=1e-5)
    assert "Bill = $3,948.00 + $169.20 + $9,300.00 + $670.86 = $14,088.06" in r.formulas


def test_cost_per_request_by_type() -> None:
    r = METER.evaluate()
    # chat: (800 × 0.73 × 3 + 300 × 15) / 1e6 = 0.006252; × 1.05 retries = 0.0065646
    assert r.value("chat_per_request") == pytest.approx(0.0065646)
    # copilot: (2,400 × 0.73 × 3 + 600 × 15) / 1e6 = 0.014256 × 1.05 = 0.0149688
    assert r.value("copilot_per_request") == pytest.approx(0.0149688)
    # agent: (12,000 × 0.73 × 3 + 4,000 × 15) / 1e6 = 0.08628 × 1.05 = 0.090594
    assert r.value("agent_per_request") == pytest.approx(0.090594)
    # spends: 6,564.60 + 2,993.76 + 4,529.70 = 14,088.06
    assert r.value("chat_spend") == pytest.approx(6564.60)
    assert r.value("agent_spend") == pytest.approx(4529.70)


def test_untagged_is_measured_in_dollars_not_requests() -> None:
    r = METER.evaluate()
    # untagged $ = 0.02 × 6,564.60 + 0.05 × 2,993.76 + 0.10 × 4,529.70 = 733.95 → 5.21%
    assert r.value("untagged") == pytest.approx(733.95, abs=0.005)
    assert r.value("untagged_share") == pytest.approx(733.95 / 14088.06, abs=1e-6)
    # by requests: (20,000 + 10,000 + 5,000) / 1,250,000 = 2.8%
    assert r.value("untagged_request_share") == pytest.approx(0.028)
    check = r.check("untagged")
    assert check.passed and check.margin == pytest.approx(0.10 - 733.95 / 14088.06, abs=1e-6)
    # budget 15,000 − 14,088.06 = 911.94
    budget = r.check("budget")
    assert budget.passed and budget.margin == pytest.approx(911.94)
    assert "$911.94 under the limit of $15,000.00" in budget.margin_text


def test_retry_semantics_20_percent_is_plus_20_and_one_sixth() -> None:
    no_retry = METER.evaluate({"retry_rate": 0})
    r = METER.evaluate({"retry_rate": 0.2})
    assert no_retry.value("total") == pytest.approx(13417.20)
    # re-billing 20% of requests once: 13,417.20 × 1.2 = 16,100.64 (+20%)
    assert r.value("total") == pytest.approx(16100.64)
    assert r.value("retry_spend_increase") == pytest.approx(0.20)
    # retries 2,683.44 / 16,100.64 = 1/6 of the final bill
    assert r.value("retries") == pytest.approx(2683.44)
    assert r.value("retry_share_of_bill") == pytest.approx(1 / 6)
    assert any("20% ÷ 120% = 16.67% of the final bill" in line for line in r.formulas)


def test_tiers_scale_the_bill() -> None:
    # frontier is 5× flagship on both rates: 14,088.06 × 5 = 70,440.30
    assert METER.evaluate({"tier": "frontier"}).value("total") == pytest.approx(70440.30)
    # fast is $0.80/$4 = 4/15 of flagship on both: 14,088.06 × 4 / 15 = 3,756.816
    assert METER.evaluate({"tier": "fast"}).value("total") == pytest.approx(3756.816)


def test_agents_in_the_dark_fails_untagged_and_agent_tagging_fixes_it() -> None:
    story = METER.presets["agents-in-the-dark"]
    r = METER.evaluate(preset=story.name)
    # untagged = 131.292 + 149.688 + 0.6 × 4,529.70 (2,717.82) = 2,998.80 → 21.29% of dollars
    assert r.value("untagged") == pytest.approx(2998.80)
    # while by requests only (20,000 + 10,000 + 30,000) / 1,250,000 = 4.8%
    assert r.value("untagged_request_share") == pytest.approx(0.048)
    assert story.about_check == "untagged" and not r.check("untagged").passed
    assert r.check("budget").passed
    fixed = METER.evaluate(dict(story.fix), preset=story.name)
    assert story.fix == {"agent_tagged": 0.9} and "agent_tagged" in story.description
    assert fixed.check("untagged").passed and fixed.all_passed


def test_retry_storm_fails_budget_and_lower_retries_fix_it() -> None:
    story = METER.presets["retry-storm"]
    r = METER.evaluate(preset=story.name)
    assert not r.check("budget").passed
    assert r.check("budget").margin == pytest.approx(15000 - 16100.64)
    assert story.about_check == "budget" and "retry_rate" in story.description
    fixed = METER.evaluate(dict(story.fix), preset=story.name)
    assert fixed.check("budget").passed and fixed.all_passed


def test_cold_cache_fails_budget_and_caching_fixes_it() -> None:
    story = METER.presets["cold-cache"]
    r = METER.evaluate(preset=story.name)
    # no cache: (1,880 × 3 + 620 × 15) × 1.05 = 14,940 × 1.05 = 15,687 > 15,000
    assert r.value("total") == pytest.approx(15687.0)
    assert r.value("saved") == 0
    assert not r.check("budget").passed
    assert "cached_share" in story.description
    fixed = METER.evaluate(dict(story.fix), preset=story.name)
    assert fixed.check("budget").passed and fixed.all_passed
