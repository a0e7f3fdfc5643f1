"""Symbolic dimensions written as expressions of other ones.

PyTorch's dynamo exporter names a derived dimension by its formula over the named ones:
``dynamic_shapes={"x": {2: 8 * Dim("height")}}`` gives the input dimension ``"8*height"``,
others read ``"s0 + 1"`` or ``"2*s1"``. Binding the names (``dims={"height": 3}``) binds every
such formula over them.
"""
from __future__ import annotations

import ast
import math
import operator

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CALLS = {"max": max, "min": min, "floor": math.floor, "ceiling": math.ceil, "ceil": math.ceil,
          "floordiv": operator.floordiv, "mod": operator.mod}


def symbols(expression: str) -> list[str]:
    """The names a dimension expression uses (not its functions), in order of first use."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return [expression]
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls]
    return list(dict.fromkeys(names))


def evaluate(expression: str, dims: dict[str, int]) -> int | None:
    """The value of ``expression`` with ``dims`` bound; None when it is not a formula of
    integers, bound names, ``+ - * // %`` and ``Max/Min/floor/ceiling/FloorDiv/Mod``, or when
    it does not come out a whole number."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        value = _eval(tree.body, dims)
    except (SyntaxError, ValueError, KeyError, ZeroDivisionError, TypeError):
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _eval(node, dims):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return dims[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, dims), _eval(node.right, dims))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _eval(node.left, dims) / _eval(node.right, dims)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, dims)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
            and node.func.id.lower() in _CALLS:
        return _CALLS[node.func.id.lower()](*(_eval(a, dims) for a in node.args))
    raise ValueError(f"not a dimension formula: {ast.dump(node)}")
