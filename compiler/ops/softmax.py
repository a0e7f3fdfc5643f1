"""Softmax, LogSoftmax, Hardmax along one axis."""
from __future__ import annotations

import numpy as np

from .common import axis_attr, result, widen
from .registry import Op, register_op


class AxisOp(Op):
    def from_onnx(self, node):
        default = -1 if node.opset >= 13 else 1
        return {"axis": axis_attr(node, default)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        return result(self.apply(widen(x), attrs["axis"]), x.dtype)


@register_op
class Softmax(AxisOp):
    name = "Softmax"

    def apply(self, x, axis):
        e = x - x.max(axis=axis, keepdims=True)
        np.exp(e, out=e)  # in place: attention maps are large
        e /= e.sum(axis=axis, keepdims=True)
        return e


@register_op
class LogSoftmax(AxisOp):
    name = "LogSoftmax"

    def apply(self, x, axis):
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


@register_op
class Hardmax(AxisOp):
    name = "Hardmax"

    def apply(self, x, axis):
        first = np.expand_dims(np.argmax(x, axis=axis), axis)
        return (np.arange(x.shape[axis]).reshape([-1 if k == axis else 1 for k in range(x.ndim)]) == first)
