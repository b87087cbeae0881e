"""Broken: counts the last token as held, so a request needing exactly the KV budget alone
(prompt + max_tokens - 1 = budget) is rejected."""

from _engine_base import mutate

Engine = mutate(
    "off_by_one_budget_reject",
    ("total - 1 > self.budget", "total > self.budget"),
).Engine
