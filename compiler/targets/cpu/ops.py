"""Operators only the CPU target's rewrites create.

``FusedConv(x, w, b[, residual])``: Conv (same attributes), then + bias, + residual when
``residual`` is set, then ReLU when ``relu`` is set. Its reference computation is Conv's followed
by the epilogue, so any target can still run a program that holds one.
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
        return y.astype(x.dtype, copy=False)
