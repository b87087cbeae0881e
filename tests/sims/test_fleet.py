"""Fleet sim pinned on hand-computed months and the three cautionary stories."""

from __future__ import annotations

import pytest

from lab.sims import SIMS

FLEET = SIMS["fleet"]


def test_default_month_hand_computed() -> None:
    r = FLEET.evaluate()  # 500B tokens of 8B chat, 18 owned H100s at $2,500, overflow rented
    # 10,000 tok/s × 3,600 × 730 = 26.28B tokens per card-month
    assert r.value("tokens_per_card_month") == pytest.approx(26.28)
    # 500 / 26.28 = 19.026 cards
    assert r.value("cards_needed") == pytest.approx(19.026, abs=1e-3)
    # owned 18 × 26.28 = 473.04B, all busy; overflow 26.96B rented = 1.02588 card-months
    assert r.value("owned_capacity") == pytest.approx(473.04)
    assert r.value("idle_share") == 0
    assert r.value("rented_card_months") == pytest.approx(26.96 / 26.28)
    assert r.value("capacity") == pytest.approx(500.0)
    # cost: 18 × 2,500 = 45,000 + 1.02588 × 2,500 × 1.35 = 3,462.33 → 48,462.33
    assert r.value("rented_cost") == pytest.approx(3462.33, abs=0.005)
    assert r.value("total_cost") == pytest.approx(48462.33, abs=0.005)
    # blended 48,462.33 / 500,000M = $0.096925 per 1M = 48.46% of $0.20
    assert r.value("blended_per_m") == pytest.approx(0.096925, abs=1e-6)
    assert r.value("cost_vs_api") == pytest.approx(0.48462, abs=1e-5)
    assert r.value("api_share") == 0
    assert r.all_passed


def test_no_owned_cards_half_rented_half_api() -> None:
    r = FLEET.evaluate({"owned_cards": 0, "rented_share": 0.5})
    # rented 250B = 250 / 26.28 = 9.51294 card-months × 3,375 = 32,106.16
    # API 250,000M × $0.20 = 50,000 → 82,106.16 / 500,000 = $0.16421 per 1M
    assert r.value("rented_cost") == pytest.approx(250 / 26.28 * 3375)
    assert r.value("api_cost") == pytest.approx(50000.0)
    assert r.value("blended_per_m") == pytest.approx((250 / 26.28 * 3375 + 50000) / 500000)
    assert r.value("api_share") == pytest.approx(0.5)
    assert r.output("owned_utilisation").value is None  # no owned cards to be idle
    assert r.check("idle").passed
    assert not r.check("api_share").passed and not r.check("blended").passed


def test_used_chip_bargain_fails_blended_and_h100_fixes_it() -> None:
    story = FLEET.presets["used-chip-bargain"]
    r = FLEET.evaluate(preset=story.name)
    # A100 = 0.45 × 10,000 = 4,500 tok/s → 11.826B per card-month; 19 owned → 224.694B
    assert r.value("tokens_per_card_month") == pytest.approx(11.826)
    # overflow 275.306B rented = 23.2797 card-months × 1,600 × 1.35 = 50,284.20
    # total 19 × 1,600 = 30,400 + 50,284.20 = 80,684.20 → $0.16137 per 1M > 0.75 × $0.20
    assert r.value("total_cost") == pytest.approx(80684.20, abs=0.01)
    assert r.value("blended_per_m") == pytest.approx(0.161368, abs=1e-6)
    assert story.about_check == "blended" and not r.check("blended").passed
    assert r.check("idle").passed and r.check("api_share").passed  # cheap, busy, no API
    fixed = FLEET.evaluate(dict(story.fix), preset=story.name)
    assert story.fix == {"card": "h100"} and "card to h100" in story.description
    # 19 H100s = 499.32B; overflow 0.68B rented: 0.68 / 26.28 × 3,375 = 87.33
    # (47,500 + 87.33) / 500,000 = $0.095175 per 1M
    assert fixed.value("blended_per_m") == pytest.approx(0.095175, abs=1e-6)
    assert fixed.check("blended").passed and fixed.all_passed


def test_shiny_chip_bet_fails_idle_and_fewer_owned_cards_fix_it() -> None:
    story = FLEET.presets["shiny-chip-bet"]
    r = FLEET.evaluate(preset=story.name)
    # B200 on 70B: 700 × 2.4 = 1,680 tok/s → 4.41504B per card-month; 40 → 176.6016B
    # demand 100B → idle 76.6016B = 43.375% of owned capacity
    assert r.value("owned_capacity") == pytest.approx(176.6016)
    assert r.value("idle_share") == pytest.approx(76.6016 / 176.6016)
    assert story.about_check == "idle" and not r.check("idle").passed
    assert r.check("idle").margin == pytest.approx(0.15 - 76.6016 / 176.6016)
    fixed = FLEET.evaluate(dict(story.fix), preset=story.name)
    assert story.fix == {"owned_cards": 22} and "owned_cards" in story.description
    # 22 × 4.41504 = 97.131B busy; 2.869B rented: 0.64985 card-months × 8,100 = 5,263.80
    assert fixed.value("idle_share") == 0
    assert fixed.value("total_cost") == pytest.approx(132000 + (100 - 97.13088) / 4.41504 * 8100)
    assert fixed.check("idle").passed and fixed.all_passed


def test_api_tax_fails_api_share_and_renting_fixes_it() -> None:
    story = FLEET.presets["api-tax"]
    r = FLEET.evaluate(preset=story.name)
    # H100 on 70B: 700 × 3,600 × 730 = 1.8396B per card-month; 20 → 36.792B
    # API gets 63.208B = 63.2% of tokens at $2.50 → 158,020; month 208,020
    assert r.value("api_share") == pytest.approx(0.63208)
    assert r.value("api_cost") == pytest.approx(158020.0)
    assert r.value("total_cost") == pytest.approx(208020.0)
    assert story.about_check == "api_share" and not r.check("api_share").passed
    fixed = FLEET.evaluate(dict(story.fix), preset=story.name)
    assert story.fix == {"rented_share": 1.0} and "rented_share" in story.description
    # rented 63.208 / 1.8396 = 34.3597 card-months × 3,375 = 115,964.07 → $1.6596 per 1M
    assert fixed.value("api_share") == 0
    assert fixed.value("blended_per_m") == pytest.approx((50000 + 63.208 / 1.8396 * 3375) / 1e5)
    assert fixed.check("api_share").passed and fixed.all_passed


def test_card_cost_dial_follows_the_card() -> None:
    # switching card uses that card's cost dial: B200 18 cards × $6,000 = 108,000 owned
    r = FLEET.evaluate({"card": "b200"})
    assert r.value("owned_cost") == pytest.approx(108000.0)
    assert FLEET.evaluate({"card": "b200", "b200_cost": 5000}).value("owned_cost") == 90000.0
