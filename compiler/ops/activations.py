"""Element-wise activations and math functions of one input (ONNX semantics, NumPy/SciPy)."""
from __future__ import annotations

import math

import numpy as np

from .common import UnaryOp, erf
from .registry import register_op


class FloatAttrsOp(UnaryOp):
    """A unary op whose attributes are all floats, given by name and ONNX default."""

    defaults: dict[str, float] = {}

    def from_onnx(self, node):
        return {k: float(node.attrs.get(k, d)) for k, d in self.defaults.items()}, node.present_inputs()


@register_op
class Relu(UnaryOp):
    name = "Relu"

    def apply(self, attrs, x):
        return np.maximum(x, 0)


@register_op
class LeakyRelu(FloatAttrsOp):
    name = "LeakyRelu"
    defaults = {"alpha": 0.01}

    def apply(self, attrs, x):
        return np.where(x < 0, x * attrs["alpha"], x)


@register_op
class Elu(FloatAttrsOp):
    name = "Elu"
    defaults = {"alpha": 1.0}

    def apply(self, attrs, x):
        return np.where(x < 0, attrs["alpha"] * (np.exp(x) - 1), x)


@register_op
class Selu(FloatAttrsOp):
    name = "Selu"
    defaults = {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}

    def apply(self, attrs, x):
        a, g = attrs["alpha"], attrs["gamma"]
        return np.where(x <= 0, g * (a * np.exp(x) - a), g * x)


@register_op
class Celu(FloatAttrsOp):
    name = "Celu"
    defaults = {"alpha": 1.0}

    def apply(self, attrs, x):
        a = attrs["alpha"]
        return np.maximum(x, 0) + np.minimum(0, a * (np.exp(x / a) - 1))


@register_op
class Sigmoid(UnaryOp):
    name = "Sigmoid"

    def apply(self, attrs, x):
        return 1 / (1 + np.exp(-x))


@register_op
class HardSigmoid(FloatAttrsOp):
    name = "HardSigmoid"
    defaults = {"alpha": 0.2, "beta": 0.5}

    def apply(self, attrs, x):
        return np.clip(attrs["alpha"] * x + attrs["beta"], 0, 1)


@register_op
class HardSwish(UnaryOp):
    name = "HardSwish"

    def apply(self, attrs, x):
        return x * np.clip(x / 6 + 0.5, 0, 1)


@register_op
class Swish(FloatAttrsOp):
    name = "Swish"
    defaults = {"alpha": 1.0}

    def apply(self, attrs, x):
        return x / (1 + np.exp(-attrs["alpha"] * x))


@register_op
class Tanh(UnaryOp):
    name = "Tanh"

    def apply(self, attrs, x):
        return np.tanh(x)


@register_op
class Erf(UnaryOp):
    name = "Erf"

    def apply(self, attrs, x):
        return erf(x)


@register_op
class Gelu(UnaryOp):
    name = "Gelu"

    def from_onnx(self, node):
        approximate = node.attrs.get("approximate", "none")
        if approximate not in ("none", "tanh"):
            node.unsupported(f"approximate={approximate!r}")
        return {"approximate": approximate}, node.present_inputs()

    def apply(self, attrs, x):
        if attrs["approximate"] == "tanh":
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return 0.5 * x * (1 + erf(x / math.sqrt(2)))


@register_op
class Softplus(UnaryOp):
    name = "Softplus"

    def apply(self, attrs, x):
        # log(1 + e^x) without forming e^x: in float32 it overflows to inf from x ≈ 89 on.
        return np.logaddexp(0, x)


@register_op
class Softsign(UnaryOp):
    name = "Softsign"

    def apply(self, attrs, x):
        return x / (1 + np.abs(x))


@register_op
class ThresholdedRelu(FloatAttrsOp):
    name = "ThresholdedRelu"
    defaults = {"alpha": 1.0}

    def apply(self, attrs, x):
        return np.where(x > attrs["alpha"], x, 0)


@register_op
class Mish(UnaryOp):
    name = "Mish"

    def apply(self, attrs, x):
        return x * np.tanh(np.log1p(np.exp(x)))


@register_op
class Shrink(FloatAttrsOp):
    name = "Shrink"
    defaults = {"lambd": 0.5, "bias": 0.0}

    def apply(self, attrs, x):
        lambd, bias = attrs["lambd"], attrs["bias"]
        return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))


def _ufunc_op(op_name: str, fn):
    """Register an op that is one NumPy ufunc applied element-wise."""
    cls = type(op_name, (UnaryOp,), {"name": op_name, "apply": lambda self, attrs, x: fn(x),
                                      "__doc__": f"ONNX {op_name}: numpy.{fn.__name__}."})
    return register_op(cls)


for _name, _fn in [("Exp", np.exp), ("Log", np.log), ("Sqrt", np.sqrt), ("Neg", np.negative),
                   ("Abs", np.abs), ("Reciprocal", np.reciprocal), ("Floor", np.floor),
                   ("Ceil", np.ceil), ("Round", np.round), ("Sign", np.sign), ("Sin", np.sin),
                   ("Cos", np.cos), ("Tan", np.tan), ("Asin", np.arcsin), ("Acos", np.arccos),
                   ("Atan", np.arctan), ("Sinh", np.sinh), ("Cosh", np.cosh), ("Asinh", np.arcsinh),
                   ("Acosh", np.arccosh), ("Atanh", np.arctanh), ("Not", np.logical_not),
                   ("BitwiseNot", np.invert)]:
    _ufunc_op(_name, _fn)
