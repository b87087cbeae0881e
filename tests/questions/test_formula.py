"""The formula evaluator computes serving arithmetic and refuses anything that is not arithmetic."""

from __future__ import annotations

import math
import time

import pytest

from questions.formula import FormulaError, compile_formula


@pytest.mark.parametrize(
    ("source", "values", "expected"),
    [
        ("2 * layers * kv_heads * head_dim * bytes / 1024",
         {"layers": 32, "kv_heads": 8, "head_dim": 128, "bytes": 2}, 128.0),
        ("(1 - a ** (g + 1)) / (1 - a)", {"a": 0.7, "g": 3}, 2.533),
        ("ceil(n / 8) * 8", {"n": 13}, 16.0),
        ("floor(free / per)", {"free": 40, "per": 0.3}, 133.0),
        ("min(a, b) + max(a, b)", {"a": 2, "b": 5}, 7.0),
        ("log2(x) + log10(100) + log(e_, 2)", {"x": 8, "e_": 8}, 3 + 2 + 3),
        ("sqrt(16) + abs(-3) + round(2.567, 2)", {}, 4 + 3 + 2.57),
        ("-x + +x + 7 // 2 + 7 % 4", {"x": 5}, 3 + 3),
        ("1e3 * 2", {}, 2000.0),
    ],
)
def test_evaluates_arithmetic(source: str, values: dict[str, float], expected: float) -> None:
    assert compile_formula(source).evaluate(values) == pytest.approx(expected, rel=1e-3)


def test_names_lists_what_the_formula_needs() -> None:
    assert compile_formula("min(a, b) * ceil(c)").names == {"a", "b", "c"}


@pytest.mark.parametrize(
    "source",
    [
        "x.real",  # attribute access
        "().__class__.__bases__",
        "__import__('os').system('echo pwned')",
        "open('/etc/passwd')",
        "eval('1')",
        "(lambda: 1)()",
        "[x for x in range(3)]",
        "x[0]",
        "'text'",
        "True + 1",
        "x if x else 1",
        "x < 3",
        "f(1)",
        "min(*xs)",
        "round(x, ndigits=2)",
        "a and b",
        "{1: 2}",
        "_secret + 1",
        "x := 3",
        "ceil(1, 2)",
        "1 +",
        "",
        "1" + " + 1" * 300,  # too long / too complex
    ],
)
def test_rejects_anything_but_whitelisted_arithmetic(source: str) -> None:
    with pytest.raises(FormulaError):
        compile_formula(source)


def test_huge_exponent_is_refused_quickly() -> None:
    formula = compile_formula("9 ** 9 ** 9")
    start = time.perf_counter()
    with pytest.raises(FormulaError, match="too large"):
        formula.evaluate({})
    assert time.perf_counter() - start < 1.0  # a refusal, not a long computation


@pytest.mark.parametrize(
    ("source", "values", "match"),
    [
        ("1 / (n - 4)", {"n": 4}, "division by zero"),
        ("log(n)", {"n": 0}, "math error"),
        ("sqrt(n)", {"n": -1}, "math error"),
        ("(-8) ** 0.5", {}, "not a real number"),
        ("10.0 ** 60 * 10.0 ** 60 * 10.0 ** 60 * 10.0 ** 60 * 10.0 ** 60 * 10.0 ** 60", {},
         "too large"),
        ("missing + 1", {}, "unknown name"),
        ("label + 1", {"label": "BF16"}, "not a number"),
    ],
)
def test_evaluation_failures_are_formula_errors(
    source: str, values: dict[str, object], match: str
) -> None:
    with pytest.raises(FormulaError, match=match):
        compile_formula(source).evaluate(values)


def test_results_are_floats_and_finite() -> None:
    value = compile_formula("2 ** 10").evaluate({})
    assert isinstance(value, float) and math.isfinite(value) and value == 1024.0
