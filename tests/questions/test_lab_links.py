"""Each question links to the lab that practises it: the serving jobs that got their own
lab (paged KV, metering, the fleet) link there, not to a lab that practises something else."""

from __future__ import annotations

import pytest

from questions.bank import load_bank

# topic -> the lab its questions practise, and the few that practise another lab on purpose
HOME_LAB = {
    "paged-kv": ("paged-kv", {"paged-kv-003"}),  # pool bytes: kv-bytes level 2
    "prefix-caching": ("paged-kv", {"prefix-caching-003"}),  # cached-token billing
    "metering": ("meter", set()),
    "fleet": ("fleet", {"fleet-010"}),  # seats per card: kv-bytes level 2
}


@pytest.mark.slow
def test_topics_with_their_own_lab_link_to_it() -> None:
    bank = load_bank()
    for question in bank.questions:
        if question.topic not in HOME_LAB or question.lab is None:
            continue
        lab, exceptions = HOME_LAB[question.topic]
        if question.id in exceptions:
            assert question.lab.exercise != lab, f"{question.id}: listed as an exception"
        else:
            assert question.lab.exercise == lab, (
                f"{question.id} links to {question.lab.exercise}, not {lab}")


@pytest.mark.slow
def test_prefix_caching_questions_link_to_the_prefix_caching_level() -> None:
    bank = load_bank()
    levels = {q.lab.level for q in bank.questions
              if q.topic == "prefix-caching" and q.lab and q.lab.exercise == "paged-kv"}
    assert levels == {3}
