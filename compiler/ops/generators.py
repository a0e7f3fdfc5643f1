"""Ops that make values from shapes or attributes: Constant, Shape, Size, ConstantOfShape,
Range, EyeLike."""
from __future__ import annotations

import math

import numpy as np

from compiler.ir.shape import Shape

from .common import int_list
from .registry import Op, register_op


@register_op
class Constant(Op):
    """A constant; the parser turns it into a ``@literal`` right away."""

    name = "Constant"

    def from_onnx(self, node):
        a = node.attrs
        if "value" in a:
            value = np.asarray(a["value"])
        elif "value_float" in a:
            value = np.array(a["value_float"], dtype=np.float32)
        elif "value_floats" in a:
            value = np.array(a["value_floats"], dtype=np.float32)
        elif "value_int" in a:
            value = np.array(a["value_int"], dtype=np.int64)
        elif "value_ints" in a:
            value = np.array(a["value_ints"], dtype=np.int64)
        else:
            node.unsupported(f"attribute {', '.join(a) or 'missing'}")
        return {"value": value}, []

    def shape(self, attrs, inputs, literals):
        return Shape.of(np.asarray(attrs["value"]))

    def compute(self, attrs):
        return np.asarray(attrs["value"])


@register_op
class ShapeOp(Op):
    name = "Shape"

    def from_onnx(self, node):
        end = node.attrs.get("end")
        # ONNX clamps start and end as Python slicing does.
        start, end, _ = slice(int(node.attrs.get("start", 0)), None if end is None else int(end)).indices(
            node.input(0).shape.ndim)
        return {"start": start, "end": max(start, end)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return Shape("int64", (attrs["end"] - attrs["start"],))

    def static_value(self, attrs, inputs):
        lens = inputs[0].lens[attrs["start"]:attrs["end"]]
        return None if None in lens else np.array(lens, dtype=np.int64)

    def compute(self, attrs, x):
        return np.array(x.shape[attrs["start"]:attrs["end"]], dtype=np.int64)


@register_op
class Size(Op):
    name = "Size"

    def shape(self, attrs, inputs, literals):
        return Shape("int64", ())

    def static_value(self, attrs, inputs):
        return np.array(inputs[0].elements(), dtype=np.int64) if inputs[0].static else None

    def compute(self, attrs, x):
        return np.array(x.size, dtype=np.int64)


@register_op
class ConstantOfShape(Op):
    name = "ConstantOfShape"

    def from_onnx(self, node):
        value = np.asarray(node.attrs.get("value", np.zeros(1, dtype=np.float32))).reshape(-1)
        shape = node.literal(0)
        attrs = {"value": value, "shape": None if shape is None else int_list(shape)}
        return attrs, ([] if shape is not None else [node.input(0)])

    def shape(self, attrs, inputs, literals):
        dtype = np.asarray(attrs["value"]).dtype
        if attrs["shape"] is not None:
            return Shape(dtype, attrs["shape"])
        return Shape(dtype, [None] * (inputs[0].lens[0] or 0))

    def compute(self, attrs, *shape):
        lens = attrs["shape"] if attrs["shape"] is not None else int_list(shape[0])
        value = np.asarray(attrs["value"])
        return np.full(lens, value.reshape(-1)[0], dtype=value.dtype)


def _scalar(value):
    return np.asarray(value).reshape(-1)[0]


@register_op
class Range(Op):
    name = "Range"

    def shape(self, attrs, inputs, literals):
        if all(v is not None for v in literals):
            start, limit, delta = (_scalar(v) for v in literals)
            return Shape(inputs[0].dtype, (max(int(math.ceil((limit - start) / delta)), 0),))
        return Shape(inputs[0].dtype, (None,))

    def compute(self, attrs, start, limit, delta):
        start, limit, delta = _scalar(start), _scalar(limit), _scalar(delta)
        n = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
        return np.arange(start, limit, delta)[:n].astype(np.asarray(start).dtype)


@register_op
class EyeLike(Op):
    name = "EyeLike"

    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        dtype = node.attrs.get("dtype")
        dtype = node.input(0).shape.dtype if dtype is None else dtype_name(int(dtype))
        return {"dtype": dtype, "k": int(node.attrs.get("k", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, x):
        return np.eye(x.shape[0], x.shape[1], k=attrs["k"], dtype=attrs["dtype"])

