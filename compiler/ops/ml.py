"""A few ops of the ai.onnx.ml domain: Binarizer, ArrayFeatureExtractor."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import UnaryOp
from .registry import Op, register_op

ML = "ai.onnx.ml"


@register_op
class Binarizer(UnaryOp):
    """1 where the input exceeds ``threshold``, else 0 (in the input's type)."""

    name = "Binarizer"
    domain = ML

    def from_onnx(self, node):
        return {"threshold": float(node.attrs.get("threshold", 0.0))}, node.present_inputs()

    def apply(self, attrs, x):
        return (x > attrs["threshold"]).astype(x.dtype)


@register_op
class ArrayFeatureExtractor(Op):
    """Select entries of the last axis by index."""

    name = "ArrayFeatureExtractor"
    domain = ML

    def shape(self, attrs, inputs, literals):
        x, idx = inputs
        n = idx.elements() if idx.static else None
        return Shape(x.dtype, (*x.lens[:-1], n) if x.ndim > 1 else (1, n))

    def compute(self, attrs, x, indices):
        y = np.take(x, indices.reshape(-1).astype(np.int64), axis=-1)
        return y.reshape(1, -1) if x.ndim == 1 else y
