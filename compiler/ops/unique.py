"""Unique: distinct values (or slices along ``axis``), sorted or in order of first occurrence,
with first indices, inverse indices and counts."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import axis_attr, tuple_shape
from .registry import Op, register_op


@register_op
class Unique(Op):
    name = "Unique"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, None), "sorted": int(node.attrs.get("sorted", 1))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs["axis"] is None:
            y = Shape(x.dtype, (None,))
            n = x.elements() if x.static else None
        else:
            lens = list(x.lens)
            n = lens[attrs["axis"]]
            lens[attrs["axis"]] = None
            y = Shape(x.dtype, lens)
        return tuple_shape(y, Shape("int64", (None,)), Shape("int64", (n,)), Shape("int64", (None,)))

    def compute(self, attrs, x):
        axis = attrs["axis"]
        values, first, inverse, counts = np.unique(x if axis is not None else x.reshape(-1), return_index=True,
                                                   return_inverse=True, return_counts=True, axis=axis)
        inverse = inverse.reshape(-1)
        if not attrs["sorted"]:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            values = np.take(values, order, axis=0 if axis is None else axis)
            first, counts, inverse = first[order], counts[order], rank[inverse]
        return values, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)
