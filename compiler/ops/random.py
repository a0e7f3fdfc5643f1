"""Random ops (Bernoulli, RandomUniform(Like), RandomNormal(Like)). A given ``seed`` starts
NumPy's legacy generator (as onnx's reference implementation does), so a seeded model gives the
same values every run; they are never evaluated ahead of time."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .registry import Op, register_op


def _generator(seed):
    return np.random.RandomState(None if seed is None else int(seed))


def _dtype(node, default):
    from compiler.onnx.types import dtype_name
    dtype = node.attrs.get("dtype")
    return default if dtype in (None, 0) else dtype_name(int(dtype))


class RandomOp(Op):
    foldable = False


@register_op
class Bernoulli(RandomOp):
    name = "Bernoulli"

    def from_onnx(self, node):
        return {"dtype": _dtype(node, node.input(0).shape.dtype), "seed": node.attrs.get("seed")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, p):
        return _generator(attrs["seed"]).binomial(1, p=p).astype(attrs["dtype"])


class Uniform(RandomOp):
    def params(self, node):
        return {"low": float(node.attrs.get("low", 0.0)), "high": float(node.attrs.get("high", 1.0)),
                "seed": node.attrs.get("seed")}

    def sample(self, attrs, shape):
        values = _generator(attrs["seed"]).rand(*shape).astype(attrs["dtype"])
        return values * (attrs["high"] - attrs["low"]) + attrs["low"]


class Normal(RandomOp):
    def params(self, node):
        return {"mean": float(node.attrs.get("mean", 0.0)), "scale": float(node.attrs.get("scale", 1.0)),
                "seed": node.attrs.get("seed")}

    def sample(self, attrs, shape):
        values = _generator(attrs["seed"]).randn(*shape).astype(attrs["dtype"])
        return values * attrs["scale"] + attrs["mean"]


class ShapeOfInput(RandomOp):
    """The *Like ops: the shape (and, unless ``dtype`` is given, the type) of input 0."""

    def from_onnx(self, node):
        return {**self.params(node), "dtype": _dtype(node, node.input(0).shape.dtype)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, like):
        return self.sample(attrs, like.shape).astype(attrs["dtype"])


class ShapeAttribute(RandomOp):
    """The shape given by the ``shape`` attribute; float32 unless ``dtype`` is given."""

    def from_onnx(self, node):
        return {**self.params(node), "dtype": _dtype(node, "float32"),
                "shape": [int(n) for n in node.attrs["shape"]]}, []

    def shape(self, attrs, inputs, literals):
        return Shape(attrs["dtype"], attrs["shape"])

    def compute(self, attrs):
        return self.sample(attrs, attrs["shape"]).astype(attrs["dtype"])


@register_op
class RandomUniformLike(ShapeOfInput, Uniform):
    name = "RandomUniformLike"


@register_op
class RandomNormalLike(ShapeOfInput, Normal):
    name = "RandomNormalLike"


@register_op
class RandomUniform(ShapeAttribute, Uniform):
    name = "RandomUniform"


@register_op
class RandomNormal(ShapeAttribute, Normal):
    name = "RandomNormal"
