"""Facts the bank once stated wrongly, each pinned so it cannot come back.

1. GPU memory is binary: an H100's "80 GB" is 80 GiB (nvidia-smi: 81,559 MiB), an H200's "141 GB"
   shows as 143,771 MiB. Treating the marketed figure as 10^9-byte GB is a mistake, not the key.
3. fleet-009: rentals are by the card-month, so renting fits seasonal growth, not daily peaks.
4. The first token is sampled from the prefill pass: TTFT has no decode step in it.
5. Sources say which version/provider a figure belongs to.
(Item 2, tolerances that accepted the named mistakes, is pinned in test_diagnosis.py.)
"""

from __future__ import annotations

import math
import tomllib

import pytest

from questions.answers import check_answer
from questions.bank import BUILTIN_DIR, builtin_files
from questions.model import Question
from tests.questions.conftest import builtin_bank

BANK = builtin_bank()
GIB = 2**30
H100_MIB, H200_MIB = 81_559, 143_771


def _q(qid: str) -> Question:
    question = BANK.get(qid)
    assert question is not None, qid
    return question


def _note(topic: str) -> str:
    return BANK.topics[topic].note


def test_kv_cache_004_uses_the_h100s_binary_memory() -> None:
    """90% of 81,559 MiB, 4 GiB reserve, 8,192-token seats of 1 GiB: 52 seats (the old key, with
    80e9 B, gave 48)."""
    instance = _q("kv-cache-004").instance({"util_pct": 90, "reserve": 4, "ctx": 8192})
    free = H100_MIB * 2**20 * 0.9 - 16.06e9 - 4 * GIB
    assert instance.answer == math.floor(free / (131_072 * 8192)) == 52
    assert "81,559 MiB" in instance.prompt and "GiB" in instance.prompt
    wrong = check_answer(instance, "48")
    assert not wrong.correct and wrong.mistake_id == "hbm-as-1e9-bytes"
    assert check_answer(instance, "52").correct


@pytest.mark.parametrize("qid", ["kv-cache-005", "kv-cache-007"])
def test_h200_questions_state_the_usable_mib_and_diagnose_decimal_gb(qid: str) -> None:
    question = _q(qid)
    instance = question.draw(0)
    assert "143,771 MiB" in instance.prompt
    assert not any(m.id == "gib-for-gb" for m in question.mistakes)
    values = dict(instance.values)
    gpus = 8 if qid == "kv-cache-007" else 1
    weights = 405.85e9 if gpus == 8 else 70.55e9
    decimal = (gpus * 141e9 * values["util_pct"] / 100 - weights
               - gpus * values["reserve"] * GIB) / values["per_tok"]
    outcome = check_answer(instance, f"{decimal:.0f}")
    assert not outcome.correct and outcome.mistake_id == "hbm-as-1e9-bytes"


def test_paged_kv_003_reads_the_pool_in_gib_as_the_engine_logs_it() -> None:
    instance = _q("paged-kv-003").instance({"free": 40, "bs": 16})
    assert instance.answer == 40 * GIB // (16 * 131_072) == 20_480
    assert "GiB" in instance.prompt
    outcome = check_answer(instance, str(math.floor(40e9 / (16 * 131_072))))
    assert not outcome.correct and outcome.mistake_id == "gb-for-gib"


def test_no_text_teaches_that_80_gb_is_not_80_gib() -> None:
    for path in builtin_files():
        text = path.read_text(encoding="utf-8")
        assert "80 GB is\nnot 80 GiB" not in text and "80 GB is not 80 GiB" not in text, path
        assert "read the GB of HBM as GiB" not in text, path
        assert "sold in GB (10⁹ B)" not in text, path
    assert "81,559 MiB" in _note("kv-cache") and "143,771 MiB" in _note("kv-cache")


def test_fleet_009_rents_for_seasons_not_daily_peaks() -> None:
    question = _q("fleet-009")
    assert question.correct is not None
    key = question.choices[question.correct]
    assert "daily peaks" in key and "API" in key and "holiday" in key
    daily = next(i for i, c in enumerate(question.choices) if c.startswith("Own for the steady "
                                                                             "base, rent for the "
                                                                             "daily peaks"))
    assert daily != question.correct and "card-month" in question.why[daily]
    assert "card-month" in question.prompt
    assert "card-month" in _note("fleet") and "never for daily peaks" in _note("fleet")


def test_ttft_has_no_decode_step_in_it() -> None:
    note = _note("latency")
    assert "first decode step" not in note
    assert "sampled from the\n  logits of the prefill pass" in note or \
        "sampled from the logits of the prefill pass" in " ".join(note.split())


def test_sources_name_their_version_and_provider() -> None:
    spec = " ".join(_note("speculative").split())
    assert "vLLM V1's logged \"draft acceptance rate\"" in spec and "V0" in spec
    disagg = " ".join(_note("disaggregation").split())
    assert "4.48×" in disagg and "arXiv" in disagg and "7.4×" in disagg and "OSDI'24" in disagg
    for topic in ("metering", "prefix-caching"):
        note = " ".join(_note(topic).split())
        assert "Anthropic" in note and "25–50%" in note, topic
    raw = tomllib.loads((BUILTIN_DIR / "disaggregation.toml").read_text(encoding="utf-8"))
    for q in raw["question"]:
        text = " ".join(q.get("explanation", "").split())
        if "4.48" in text:
            assert "arXiv v1" in text, q["id"]
