"""New cards are introduced across topics, easier first, not one topic file at a time."""

from __future__ import annotations

import pytest

from questions.bank import load_bank


@pytest.mark.slow
def test_study_order_interleaves_topics_and_starts_easy() -> None:
    bank = load_bank()
    order = bank.study_order()
    assert sorted(q.id for q in order) == sorted(q.id for q in bank.questions)
    n_topics = len({q.topic for q in bank.questions})
    first_round = order[:n_topics]
    assert len({q.topic for q in first_round}) == n_topics
    for topic in {q.topic for q in bank.questions}:
        difficulties = [q.difficulty for q in order if q.topic == topic]
        assert difficulties == sorted(difficulties)
