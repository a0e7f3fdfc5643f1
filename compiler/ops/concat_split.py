"""Concat and Split."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import attr_or_literal_ints, axis_attr, norm_axis, tuple_shape
from .registry import Op, register_op


@register_op
class Concat(Op):
    name = "Concat"

    def from_onnx(self, node):
        inputs = node.present_inputs()
        return {"axis": norm_axis(int(node.attrs["axis"]), inputs[0].shape.ndim)}, inputs

    def shape(self, attrs, inputs, literals):
        a = attrs["axis"]
        lens = list(inputs[0].lens)
        parts = [s.lens[a] for s in inputs]
        lens[a] = None if None in parts else sum(parts)
        for k in range(len(lens)):
            if k != a and lens[k] is None:
                lens[k] = next((s.lens[k] for s in inputs if s.lens[k] is not None), None)
        return Shape(inputs[0].dtype, lens)

    def compute(self, attrs, *args):
        return np.concatenate(args, axis=attrs["axis"])


def split_sizes(length: int, count: int) -> list[int]:
    """Equal parts; when ``length`` does not divide, parts of ceil(length/count) and a smaller
    last one (opset 18's num_outputs rule)."""
    step = -(-length // count)
    return [min(step, length - k * step) for k in range(count)]


@register_op
class Split(Op):
    name = "Split"

    def from_onnx(self, node):
        x = node.input(0)
        axis = axis_attr(node, 0)
        sizes = attr_or_literal_ints(node, "split", 1, "split sizes")
        if sizes is None:
            length = x.shape.lens[axis]
            if length is None:
                node.unsupported("splitting a run-time length")
            count = int(node.attrs.get("num_outputs", node.num_outputs or len(node.outputs)))
            sizes = split_sizes(length, max(count, len(node.outputs)))
        return {"axis": axis, "split": sizes}, [x]

    def shape(self, attrs, inputs, literals):
        x, a = inputs[0], attrs["axis"]
        outs = []
        for n in attrs["split"]:
            lens = list(x.lens)
            lens[a] = n
            outs.append(Shape(x.dtype, lens))
        return tuple_shape(*outs)

    def compute(self, attrs, x):
        cuts = np.cumsum(attrs["split"])[:-1]
        return tuple(np.split(x, cuts, axis=attrs["axis"]))


@register_op
class Interleave(Op):
    """Inputs of one shape interleaved along ``axis``: result index ``i * parts + j`` along it is
    input ``j``'s index ``i``. A concatenation followed by a channel shuffle (ShuffleNet) is one
    (``passes.recognize_interleave``); not an ONNX operator."""

    name = "interleave"

    def shape(self, attrs, inputs, literals):
        a = attrs["axis"]
        lens = list(inputs[0].lens)
        lens[a] = None if lens[a] is None else lens[a] * len(inputs)
        return Shape(inputs[0].dtype, lens)

    def compute(self, attrs, *args):
        a = attrs["axis"]
        stacked = np.stack(args, axis=a + 1)
        lens = list(args[0].shape)
        lens[a] *= len(args)
        return stacked.reshape(lens)
