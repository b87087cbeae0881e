"""A tiny safe evaluator for answer formulas: an AST whitelist walked by hand, never `eval`.

Bank files and learner packs are untrusted text, so a formula may only use numbers, the names of
its question's values, `+ - * / // % **`, unary minus/plus, parentheses and a few math functions.
Anything else (attribute access, subscripts, lambdas, comprehensions, other calls, strings) is
rejected when the formula is compiled, before any value is known.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAX_SOURCE_CHARS = 500
MAX_NODES = 200
MAX_EXPONENT = 1024.0  # p ** n fan-out maths needs n in the hundreds; all maths is in floats,
# so 9 ** 9 ** 9 overflows at once instead of building a huge integer
MAX_MAGNITUDE = 1e300


class FormulaError(ValueError):
    """A formula that is not allowed, does not parse, or fails to evaluate."""


def _round(x: float, ndigits: float | None = None) -> float:
    if ndigits is None:
        return float(round(x))
    if ndigits != int(ndigits):
        raise FormulaError("round(x, n): n must be a whole number")
    return float(round(x, int(ndigits)))


def _log(x: float, base: float | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


FUNCTIONS: dict[str, tuple[Callable[..., float], int, int]] = {
    # name: (implementation, min args, max args)
    "min": (min, 1, 16),
    "max": (max, 1, 16),
    "ceil": (lambda x: float(math.ceil(x)), 1, 1),
    "floor": (lambda x: float(math.floor(x)), 1, 1),
    "log": (_log, 1, 2),
    "log2": (math.log2, 1, 1),
    "log10": (math.log10, 1, 1),
    "sqrt": (math.sqrt, 1, 1),
    "round": (_round, 1, 2),
    "abs": (abs, 1, 1),
}

_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: float(a // b),
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: _power(a, b),
}


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > MAX_EXPONENT:
        raise FormulaError(f"exponent {exponent:g} is too large (limit {MAX_EXPONENT:g})")
    result = base**exponent
    if isinstance(result, complex):
        raise FormulaError(f"{base:g} ** {exponent:g} is not a real number")
    return float(result)


@dataclass(frozen=True)
class Formula:
    """A compiled, checked formula; `names` are the values it needs."""

    source: str
    names: frozenset[str]
    _tree: ast.Expression

    def evaluate(self, values: Mapping[str, object]) -> float:
        """Evaluate with the given values; raises FormulaError (never anything else) on failure."""
        try:
            result = _eval(self._tree.body, values)
        except FormulaError:
            raise
        except ZeroDivisionError:
            raise FormulaError("division by zero") from None
        except OverflowError:
            raise FormulaError("number too large") from None
        except (ValueError, TypeError) as exc:  # math domain errors, e.g. log(0), sqrt(-1)
            raise FormulaError(f"math error: {exc}") from None
        if not math.isfinite(result) or abs(result) > MAX_MAGNITUDE:
            raise FormulaError(f"number too large or not finite ({result})")
        return result


def compile_formula(source: str) -> Formula:
    """Parse and whitelist-check a formula; raises FormulaError naming what is not allowed."""
    if not isinstance(source, str):
        raise FormulaError("a formula must be a string")
    text = source.strip()
    if not text:
        raise FormulaError("empty formula")
    if len(text) > MAX_SOURCE_CHARS:
        raise FormulaError(f"formula longer than {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"syntax error: {exc.msg}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise FormulaError(f"formula too complex (more than {MAX_NODES} parts)")
    names: set[str] = set()
    for node in nodes:
        _check_node(node, names)
    return Formula(text, frozenset(names), tree)


def _check_operator(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.operator) and type(node) not in _BINOPS:
        raise FormulaError(f"operator {type(node).__name__} is not allowed")
    if isinstance(node, ast.unaryop) and not isinstance(node, ast.USub | ast.UAdd):
        raise FormulaError(f"operator {type(node).__name__} is not allowed")


def _check_constant(node: ast.AST, names: set[str]) -> None:
    assert isinstance(node, ast.Constant)
    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise FormulaError(f"only numbers are allowed, not {node.value!r}")


def _check_name(node: ast.AST, names: set[str]) -> None:
    assert isinstance(node, ast.Name)
    if node.id.startswith("_"):
        raise FormulaError(f"name {node.id!r} is not allowed")
    if node.id not in FUNCTIONS:
        names.add(node.id)


def _check_call(node: ast.AST, names: set[str]) -> None:
    assert isinstance(node, ast.Call)
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        allowed = ", ".join(sorted(FUNCTIONS))
        raise FormulaError(f"call to {called!r} is not allowed (allowed: {allowed})")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise FormulaError(f"{node.func.id}() takes plain positional arguments only")
    _, lo, hi = FUNCTIONS[node.func.id]
    if not lo <= len(node.args) <= hi:
        raise FormulaError(f"{node.func.id}() takes {lo}..{hi} arguments")


def _refuse_conditional(node: ast.AST, names: set[str]) -> None:
    raise FormulaError(
        "a formula has no conditionals or comparisons: write a choice with min, max, ceil "
        "or floor (e.g. max(a, b) for 'a if a > b else b', min(1, max(0, x)) to clamp)")


# What a formula may hold, node kind by node kind (the first match checks the node); any
# other node is refused.
_NODE_CHECKS: tuple[tuple[type | tuple[type, ...], Callable[[ast.AST, set[str]], None]], ...] = (
    ((ast.Expression, ast.Load, ast.operator, ast.unaryop), _check_operator),
    ((ast.BinOp, ast.UnaryOp), lambda node, names: None),
    (ast.Constant, _check_constant),
    (ast.Name, _check_name),
    (ast.Call, _check_call),
    ((ast.IfExp, ast.Compare, ast.BoolOp), _refuse_conditional),
)


def _check_node(node: ast.AST, names: set[str]) -> None:
    """Refuse a node a formula may not hold; collect the value names it uses in `names`."""
    for kinds, check in _NODE_CHECKS:
        if isinstance(node, kinds):
            check(node, names)
            return
    raise FormulaError(f"{type(node).__name__} is not allowed in a formula")


def _eval(node: ast.expr, values: Mapping[str, object]) -> float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int | float):
            return float(node.value)
        raise FormulaError(f"only numbers are allowed, not {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise FormulaError(f"{node.id} is a function; call it")
        if node.id not in values:
            raise FormulaError(f"unknown name {node.id!r}")
        value = values[node.id]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormulaError(f"{node.id!r} is not a number ({value!r})")
        return float(value)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, values)
        right = _eval(node.right, values)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        func = FUNCTIONS[node.func.id][0]
        return float(func(*[_eval(arg, values) for arg in node.args]))
    raise FormulaError(f"{type(node).__name__} is not allowed in a formula")  # pragma: no cover
