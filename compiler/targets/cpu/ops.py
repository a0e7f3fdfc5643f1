"""Operators only the CPU target's rewrites create.

``FusedConv(x, w, b[, residual])``: Conv (same attributes), then + bias, + residual when
``residual`` is set, then ReLU when ``relu`` is set. Its reference computation is Conv's followed
by the epilogue, so any target can still run a program that holds one. ``clip``: ``[min, max]``
bounds applied last (ReLU6), either may be None; ``swish``: y · sigmoid(y) last (SiLU); ``hardswish``: y · clip(y / 6 + 1/2, 0, 1) last.

``FusedPointwise(inputs...)``: a chain of element-wise ops (``fuse.FusePointwise``).
"""
from __future__ import annotations

import numpy as np

from compiler.ops.registry import Op, get_op, register_op


@register_op
class FusedConv(Op):
    name = "FusedConv"

    def shape(self, attrs, inputs, literals):
        return get_op("Conv").shape(attrs, inputs[:3], literals[:3])

    def compute(self, attrs, x, w, b, residual=None):
        y = get_op("Conv").compute(attrs, x, w, b)
        if residual is not None:
            y = y + residual
        if attrs.get("relu"):
            y = np.maximum(y, 0)
        low, high = attrs.get("clip") or (None, None)
        if low is not None:
            y = np.maximum(y, np.asarray(low).astype(y.dtype))
        if high is not None:
            y = np.minimum(y, np.asarray(high).astype(y.dtype))
        if attrs.get("swish"):
            y = y * (1 / (1 + np.exp(-y)))
        if attrs.get("hardswish"):
            y = get_op("HardSwish").compute({}, y.astype(x.dtype, copy=False))
        return y.astype(x.dtype, copy=False)


@register_op
class FusedPointwise(Op):
    """A chain of element-wise ops run as one instruction. ``steps``: ``[op, attrs, operands]``
    in order, where operand ``r`` is input ``r`` below the number of inputs, else the result of
    step ``r - len(inputs)``; the last step's result is the instruction's. Its reference
    computation runs each step's own."""

    name = "FusedPointwise"
    pointwise = True

    def shape(self, attrs, inputs, literals):
        shapes = list(inputs)
        for op, step_attrs, refs in attrs["steps"]:
            operands = [shapes[r] for r in refs]
            shapes.append(get_op(op).shape(step_attrs, operands, [None] * len(operands)))
        return shapes[-1]

    def compute(self, attrs, *args):
        values = list(args)
        for op, step_attrs, refs in attrs["steps"]:
            values.append(get_op(op).compute(step_attrs, *[values[r] for r in refs]))
        return values[-1]
