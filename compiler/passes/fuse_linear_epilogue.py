"""Fold a linear layer's bias, GELU and residual into its product, as one ``fused_linear``
instruction a target can run as one GEMM with an epilogue (cuBLASLt's on the gpu), so a
Linear -> GELU writes its result once instead of a product, a bias add and a GELU of about five
element-wise steps.

The form (each step the only reader of the one before)::

    MatMul(x, W) -> Add(b) -> [GELU] | [Add(residual)]

W is a 2-D literal (K, N), b a literal of N elements, the residual of the result's shape and type.
GELU is the ``Gelu`` op or its decomposition in element-wise ops over the biased value and scalar
literals (``x * 0.5 * (1 + erf(x / sqrt 2))`` in any order of its factors, or the tanh form); a
decomposition is recognised by evaluating it, in float64, against the form its Erf or Tanh names.
A residual after GELU is left to pointwise fusion (cuBLASLt adds its C before the activation).

``fused_linear(x, W, b[, r])``: attributes ``gelu`` (None, "erf" or "tanh") and ``residual``.
Which dtypes to take is the target's choice (``accept(dtype)``).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ops.common import erf
from compiler.ops.registry import Op, get_op, register_op
from compiler.passes.rewrite import only_user, substitute

FUSED_LINEAR = "fused_linear"
ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Erf", "Tanh", "Gelu"})
MAX_GELU_STEPS = 10
LOOK_AHEAD = 48             # instructions after the bias add searched for GELU's steps
PROBE = np.linspace(-6.0, 6.0, 97)
GELU_TOLERANCE = 4e-3       # fp16 literals (sqrt 2, 0.044715) round in the third digit


def gelu(kind: str, x, erf=erf):
    if kind == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _probe_erf(x):
    """erf of the probe's values through the standard library: SciPy's (``ops.common.erf``) would
    import scipy.special, 0.1-0.2 s that nothing else in a gpu compile needs, into every compile
    of a model with a GELU."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _scalar(ins) -> bool:
    return ins.op == LITERAL and np.asarray(ins.value).size == 1


def _bias_add(product):
    """The Add of a (N,) literal bias that alone reads ``product``, and the bias."""
    add = only_user(product, "Add")
    if add is None or add.shape != product.shape:
        return None, None
    bias = add.inputs[1] if add.inputs[0] is product else add.inputs[0]
    n = product.shape.lens[-1]
    if bias.op != LITERAL or np.asarray(bias.value).size != n or bias.shape.dtype != product.shape.dtype:
        return None, None
    return add, bias


def _region(y):
    """The element-wise steps after ``y`` that read only ``y``, each other and scalar literals,
    in order, and the one of them read from outside; (None, None) unless exactly one is."""
    module, inside = y.module, {y}
    steps = []
    start = module.instructions.index(y) + 1
    for ins in module.instructions[start:start + LOOK_AHEAD]:
        if len(steps) == MAX_GELU_STEPS:
            break
        if ins.op in ELEMENTWISE and any(i in inside for i in ins.inputs) \
                and all(i in inside or _scalar(i) for i in ins.inputs):
            inside.add(ins)
            steps.append(ins)
    read_outside = [s for s in [y] + steps if any(u not in inside for u in s.users)]
    if len(read_outside) != 1 or read_outside[0] is y or not steps:
        return None, None
    return steps, read_outside[0]


def _evaluate(y, steps, last):
    values = {y: PROBE}
    for s in steps:
        args = [values.get(i) if i in values else np.asarray(i.value, np.float64) for i in s.inputs]
        value = _probe_erf(*args) if s.op == "Erf" else get_op(s.op).compute(s.attrs, *args)
        values[s] = np.asarray(value, np.float64)
    return values[last]


def gelu_after(y):
    """(kind, last step) when the steps after ``y`` compute GELU of it, else None."""
    steps, last = _region(y)
    if steps is None:
        return None
    ops = {s.op for s in steps}
    if ops == {"Gelu"} and len(steps) == 1:
        return ("tanh" if steps[0].attrs.get("approximate", "none") == "tanh" else "erf"), last
    kind = "erf" if "Erf" in ops else "tanh" if "Tanh" in ops else None
    if kind is None or "Gelu" in ops:
        return None
    try:
        got = _evaluate(y, steps, last)
    except Exception:  # noqa: BLE001 - a step the probe cannot evaluate: not a GELU
        return None
    want = gelu(kind, PROBE, _probe_erf)
    return (kind, last) if np.allclose(got, want, rtol=GELU_TOLERANCE, atol=GELU_TOLERANCE) else None


def _residual_add(y):
    add = only_user(y, "Add")
    if add is None or add.shape != y.shape:
        return None, None
    other = add.inputs[1] if add.inputs[0] is y else add.inputs[0]
    return (add, other) if other is not y and other.shape == y.shape else (None, None)


class FuseLinearEpilogue:
    name = "fuse_linear_epilogue"

    def __init__(self, accept: Callable[[str], bool]):
        self.accept = accept

    def apply(self, mpm) -> None:
        module = mpm.module
        for product in [i for i in module.instructions if i.op == "MatMul"]:
            x, w = product.inputs
            if w.op != LITERAL or w.shape.ndim != 2 or x.shape.ndim < 2 or not self.accept(product.shape.dtype):
                continue
            add, bias = _bias_add(product)
            if add is None:
                continue
            found, (res_add, residual) = gelu_after(add), _residual_add(add)
            last, attrs, inputs = add, {"gelu": None, "residual": False}, [x, w, bias]
            if found is not None:
                attrs["gelu"], last = found
            elif res_add is not None:
                attrs["residual"], last = True, res_add
                inputs.append(residual)
            fused = module.add_instruction(FUSED_LINEAR, inputs, attrs, shape=last.shape, before=last,
                                           name=product.name)
            substitute(module, last, fused)     # the rest of the chain is dead: DCE removes it


@register_op
class FusedLinear(Op):
    """x @ W + b, then GELU or + residual; computed in float64 and rounded once, as the fused
    GEMM rounds its fp32 accumulator once."""

    name = FUSED_LINEAR

    def shape(self, attrs, inputs, literals):
        return inputs[3] if attrs["residual"] else get_op("MatMul").shape({}, inputs[:2], literals[:2])

    def compute(self, attrs, x, w, b, residual=None):
        y = np.matmul(np.asarray(x, np.float64), np.asarray(w, np.float64)) + np.asarray(b, np.float64).reshape(-1)
        if attrs["gelu"]:
            y = gelu(attrs["gelu"], y)
        if residual is not None:
            y = y + np.asarray(residual, np.float64)
        return y.astype(x.dtype)
