"""Broadcasting element-wise ops of two or more inputs: arithmetic, comparisons, logic."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import BinaryOp, broadcast_lens, result, widen
from .registry import register_op


@register_op
class Add(BinaryOp):
    name = "Add"

    def apply(self, attrs, a, b):
        return a + b


@register_op
class Sub(BinaryOp):
    name = "Sub"

    def apply(self, attrs, a, b):
        return a - b


@register_op
class Mul(BinaryOp):
    name = "Mul"

    def apply(self, attrs, a, b):
        return a * b


@register_op
class Div(BinaryOp):
    name = "Div"

    def apply(self, attrs, a, b):
        if np.issubdtype(a.dtype, np.integer):
            # Integer division truncates toward zero, as C does.
            q = np.abs(a) // np.abs(b)
            return np.where((a < 0) != (b < 0), -q, q)
        return a / b


@register_op
class Pow(BinaryOp):
    name = "Pow"

    def apply(self, attrs, a, b):
        if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
            return np.power(a, b.astype(a.dtype))
        if np.issubdtype(a.dtype, np.integer):
            return np.power(a.astype(np.float64), b)
        return np.power(a, b.astype(a.dtype) if a.dtype.itemsize >= b.dtype.itemsize else b)


@register_op
class Mod(BinaryOp):
    name = "Mod"

    def from_onnx(self, node):
        return {"fmod": int(node.attrs.get("fmod", 0))}, node.present_inputs()

    def apply(self, attrs, a, b):
        return np.fmod(a, b) if attrs["fmod"] else np.mod(a, b)


@register_op
class PRelu(BinaryOp):
    name = "PRelu"

    def apply(self, attrs, x, slope):
        return np.where(x < 0, x * slope, x)


@register_op
class BitShift(BinaryOp):
    name = "BitShift"

    def from_onnx(self, node):
        return {"direction": node.attrs["direction"]}, node.present_inputs()

    def apply(self, attrs, a, b):
        return np.left_shift(a, b) if attrs["direction"] == "LEFT" else np.right_shift(a, b)


class Comparison(BinaryOp):
    out_dtype = "bool"


def _binary(op_name: str, fn, base=BinaryOp):
    cls = type(op_name, (base,), {"name": op_name, "apply": lambda self, attrs, a, b: fn(a, b),
                                   "__doc__": f"ONNX {op_name}: numpy.{fn.__name__}."})
    return register_op(cls)


for _name, _fn in [("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                   ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal),
                   ("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)]:
    _binary(_name, _fn, Comparison)
for _name, _fn in [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or),
                   ("BitwiseXor", np.bitwise_xor)]:
    _binary(_name, _fn)


@register_op
class Where(BinaryOp):
    name = "Where"

    def shape(self, attrs, inputs, literals):
        return Shape(inputs[1].dtype, broadcast_lens(*(s.lens for s in inputs)))

    def compute(self, attrs, cond, a, b):
        return result(np.where(cond, a, b), a.dtype)


class Variadic(BinaryOp):
    """Sum, Min, Max, Mean: a fold of a binary function over any number of inputs."""

    def compute(self, attrs, *args):
        values = [widen(a) for a in args]
        out = values[0]
        for v in values[1:]:
            out = self.fold(out, v)
        return result(self.finish(out, len(values)), args[0].dtype)

    def finish(self, out, n):
        return out


@register_op
class Sum(Variadic):
    name = "Sum"

    def fold(self, a, b):
        return a + b


@register_op
class Max(Variadic):
    name = "Max"

    def fold(self, a, b):
        return np.maximum(a, b)


@register_op
class Min(Variadic):
    name = "Min"

    def fold(self, a, b):
        return np.minimum(a, b)


@register_op
class Mean(Variadic):
    name = "Mean"

    def fold(self, a, b):
        return a + b

    def finish(self, out, n):
        return out / n


@register_op
class SwiGLU(BinaryOp):
    """a · sigmoid(alpha · a) · b."""

    name = "SwiGLU"

    def from_onnx(self, node):
        return {"alpha": float(node.attrs.get("alpha", 1.0))}, node.present_inputs()

    def apply(self, attrs, a, b):
        return a / (1 + np.exp(-attrs["alpha"] * a)) * b
