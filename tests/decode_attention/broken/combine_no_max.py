# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: the combine takes exp(m_s) without subtracting the largest max."""

from _da_base import export, mutate

export(mutate(
    'combine_no_max',
    ('    w = tl.where(m > float("-inf"), tl.exp(m - top), 0.0)\n', '    w = tl.where(m > float("-inf"), tl.exp(m), 0.0)\n'),
), globals())
