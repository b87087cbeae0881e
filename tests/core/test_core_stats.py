"""How a recorded mistake id is described in Stats and `dojo stats`."""

from __future__ import annotations

import types

import pytest

from trainer.core.stats import describe_mistake

QUESTION = types.SimpleNamespace(
    choices=("static  batching", "continuous batching", "none"),
    why=("assumed a batch is fixed for the run", "", ""),
    mistakes=(types.SimpleNamespace(id="plus-tpot", says="added a TPOT for the first token"),),
    steps=(),
)


@pytest.mark.parametrize("mistake_id,says", [
    ("plus-tpot", "added a TPOT for the first token"),
    ("choice:0", "chose “static batching”: assumed a batch is fixed for the run"),
    ("choice:2", "chose “none”"),            # a distractor with no why (yet)
    ("choice:3", "choice:3"),                # no such choice any more
    ("choice:x", "choice:x"),
    ("gone", "gone"),                        # a mistake since removed from the question
])
def test_a_mistake_is_described_from_the_question(mistake_id: str, says: str) -> None:
    assert describe_mistake(QUESTION, mistake_id) == says  # type: ignore[arg-type]


def test_a_question_gone_from_the_bank_shows_the_bare_id() -> None:
    assert describe_mistake(None, "choice:1") == "choice:1"
