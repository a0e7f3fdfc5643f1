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
    def sample(self, attrs, shape):
        values = _generator(attrs["seed"]).rand(*shape).astype(attrs["dtype"])
        return values * (attrs["high"] - attrs["low"]) + attrs["low"]


class Normal(RandomOp):
    def sample(self, attrs, shape):
        values = _generator(attrs["seed"]).randn(*shape).astype(attrs["dtype"])
        return values * attrs["scale"] + attrs["mean"]


def _uniform_attrs(node):
    return {"low": float(node.attrs.get("low", 0.0)), "high": float(node.attrs.get("high", 1.0)),
            "seed": node.attrs.get("seed")}


def _normal_attrs(node):
    return {"mean": float(node.attrs.get("mean", 0.0)), "scale": float(node.attrs.get("scale", 1.0)),
            "seed": node.attrs.get("seed")}


@register_op
class RandomUniformLike(Uniform):
    name = "RandomUniformLike"

    def from_onnx(self, node):
        return {**_uniform_attrs(node), "dtype": _dtype(node, node.input(0).shape.dtype)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, like):
        return self.sample(attrs, like.shape).astype(attrs["dtype"])


@register_op
class RandomNormalLike(Normal):
    name = "RandomNormalLike"

    def from_onnx(self, node):
        return {**_normal_attrs(node), "dtype": _dtype(node, node.input(0).shape.dtype)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, like):
        return self.sample(attrs, like.shape).astype(attrs["dtype"])


@register_op
class RandomUniform(Uniform):
    name = "RandomUniform"

    def from_onnx(self, node):
        return {**_uniform_attrs(node), "dtype": _dtype(node, "float32"),
                "shape": [int(n) for n in node.attrs["shape"]]}, []

    def shape(self, attrs, inputs, literals):
        return Shape(attrs["dtype"], attrs["shape"])

    def compute(self, attrs):
        return self.sample(attrs, attrs["shape"]).astype(attrs["dtype"])


@register_op
class RandomNormal(Normal):
    name = "RandomNormal"

    def from_onnx(self, node):
        return {**_normal_attrs(node), "dtype": _dtype(node, "float32"),
                "shape": [int(n) for n in node.attrs["shape"]]}, []

    def shape(self, attrs, inputs, literals):
        return Shape(attrs["dtype"], attrs["shape"])

    def compute(self, attrs):
        return self.sample(attrs, attrs["shape"]).astype(attrs["dtype"])
