"""Ordinals, plurals and articles: the cases the walkthrough found, and the
boundaries of each rule (11-13 vs 1-3, 110 vs 11, acronyms vs words)."""

from __future__ import annotations

import pytest

from questions.wording import article, ordinal, plural, with_article


@pytest.mark.parametrize(("n", "text"), [
    (0, "0th"), (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
    (13, "13th"), (21, "21st"), (22, "22nd"), (32, "32nd"), (100, "100th"), (101, "101st"),
    (111, "111th"), (112, "112th"), (113, "113th"), (1001, "1001st"),
])
def test_ordinals(n: int, text: str) -> None:
    assert ordinal(n) == text


@pytest.mark.parametrize(("count", "noun", "text"), [
    (1, "byte", "1 byte"), (2, "byte", "2 bytes"), (0, "attempt", "0 attempts"),
    (1, "attempt", "1 attempt"), (1, "KV head", "1 KV head"), (8, "KV head", "8 KV heads"),
    (2, "batch", "2 batches"), (3, "query", "3 queries"), (2, "day", "2 days"),
    (4, "GPU", "4 GPUs"), (1.5, "byte", "1.5 bytes"), (1.0, "byte", "1 byte"),
    (1200, "token", "1,200 tokens"), (2, "child", "2 children"),
])
def test_plurals(count: float, noun: str, text: str) -> None:
    assert plural(count, noun) == text


@pytest.mark.parametrize(("word", "art"), [
    ("800-token", "an"), ("8", "an"), ("80", "an"), ("11-layer", "an"), ("18 GB", "an"),
    ("11,000", "an"), ("110-token", "a"), ("1,100", "a"), ("1.2k", "a"), ("1", "a"),
    ("180", "a"), ("LLM", "an"), ("MCQ", "an"), ("H100", "an"), ("GPU", "a"), ("KV cache", "a"),
    ("SLO", "an"), ("hour", "an"), ("honest", "an"), ("unit", "a"), ("user", "a"),
    ("one-layer", "a"), ("answer", "an"), ("idle", "an"), ("batch", "a"), ("", "a"),
    ("A100", "an"), ("U", "a"),
])
def test_articles(word: str, art: str) -> None:
    assert article(word) == art


def test_with_article() -> None:
    assert with_article("800-token prompt") == "an 800-token prompt"
