"""Fold the elementwise tail of a convolution into it: ``relu(conv(x) + r)``, ``conv(x) + r``
and ``relu(conv(x))`` become one ``fused_conv`` (cuDNN runs bias, residual add and ReLU in the
convolution's epilogue, so the result is written once).

Runs after pointwise fusion: the tail is a ``fused_pointwise`` whose body is one of those shapes,
reading the convolution (its only user) and, for the add, a residual of exactly the output's
shape and type. Batch norms were folded into the convolution before.
"""
from __future__ import annotations

from compiler.ir.shape import Shape
from compiler.ops.registry import Op, get_op, register_op

FUSED_CONV = "fused_conv"


def _pattern(body: list[dict]):
    """(conv arg, residual arg or None) for a supported tail body, else None."""
    ops = [s["op"] for s in body]
    if ops == ["Relu"]:
        return body[0]["args"][0], None, True
    if ops in (["Add"], ["Add", "Relu"]):
        if ops == ["Add", "Relu"] and body[1]["args"] != ["t0"]:
            return None
        a, b = body[0]["args"]
        if not (a.startswith("x") and b.startswith("x")) or a == b:
            return None
        return (a, b, len(ops) == 2)
    return None


class FuseConvEpilogue:
    name = "fuse_conv_epilogue"

    def apply(self, mpm) -> None:
        module = mpm.module
        for tail in [i for i in module.instructions if i.op == "fused_pointwise"]:
            found = _pattern(tail.attrs["body"])
            if found is None:
                continue
            first, second, relu = found
            for conv_arg, res_arg in ((first, second), (second, first)):
                if conv_arg is None:
                    continue
                conv = tail.inputs[int(conv_arg[1:])]
                residual = tail.inputs[int(res_arg[1:])] if res_arg else None
                if self._fits(conv, tail, residual):
                    self._fuse(module, conv, tail, residual, relu)
                    break

    @staticmethod
    def _fits(conv, tail, residual) -> bool:
        if conv.op != "Conv" or conv.module is not tail.module or conv.users != [tail]:
            return False
        if conv.shape != tail.shape or conv.shape.ndim != 4:
            return False
        if residual is not None and (residual.shape != tail.shape or residual is conv):
            return False
        return True

    @staticmethod
    def _fuse(module, conv, tail, residual, relu):
        inputs = list(conv.inputs)
        attrs = dict(conv.attrs, bias=len(conv.inputs) > 2, residual=residual is not None, relu=relu)
        if residual is not None:
            inputs.append(residual)
        fused = module.add_instruction(FUSED_CONV, inputs, attrs, shape=tail.shape, before=tail,
                                       name=conv.name)
        module.replace_instruction(tail, fused)
        module.remove_instruction(tail)
        module.remove_instruction(conv)


@register_op
class FusedConv(Op):
    """Conv (+ bias) (+ residual) (+ ReLU); the reference is the ops it replaced."""

    name = FUSED_CONV

    def shape(self, attrs, inputs, literals):
        x = get_op("Conv").shape(attrs, inputs[:2], literals[:2])
        return Shape(x.dtype, x.lens)

    def compute(self, attrs, x, w, *rest):
        import numpy as np
        rest = list(rest)
        b = rest.pop(0) if attrs["bias"] else None
        y = get_op("Conv").compute(attrs, x, w, b)
        if attrs["residual"]:
            y = (y + rest.pop(0)).astype(y.dtype)
        if attrs["relu"]:
            y = np.maximum(y, 0).astype(y.dtype)
        return y
