"""Operators only the CPU target's rewrites create.

``FusedPointwise(inputs...)``: a chain of element-wise ops (``fuse.FusePointwise``). (The fused
convolution is the shared ``fused_conv``, ``compiler.passes.fuse_conv_epilogue``.)
"""
from __future__ import annotations

from compiler.ops.registry import Op, get_op, register_op


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
