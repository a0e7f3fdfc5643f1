"""The residual Add before a LayerNormalization or RMSNormalization folded into it:

    s = Add(a, b)    y = LayerNorm(s, scale[, bias])   (or RMSNormalization(s, scale))

becomes one ``residual_norm(a, b, scale[, bias])``: y, or the tuple (y, s) when s has other users
(the residual stream a transformer carries to its next block), read through get_tuple_elem.
Taken when a, b and s have one shape (no broadcasting) and the norm is over the last axis with a
single output; other Adds and norms are left as they are.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape, TupleShape
from compiler.ops.common import result, widen
from compiler.ops.registry import Op, get_op, register_op

RESIDUAL_NORM = "residual_norm"
NORMS = ("LayerNormalization", "RMSNormalization")


@register_op
class ResidualNorm(Op):
    """attrs: ``norm`` (the op it stands for) and that op's attributes, ``with_sum``."""

    name = RESIDUAL_NORM
    foldable = False

    def shape(self, attrs, inputs, literals):
        return TupleShape((inputs[0], inputs[0])) if attrs["with_sum"] else inputs[0]

    def compute(self, attrs, a, b, *params):
        s = result(widen(a) + widen(b), a.dtype)      # rounded as the Add alone rounds it
        y = get_op(attrs["norm"]).compute(attrs, s, *params)
        return (y, s) if attrs["with_sum"] else y


def _takes(norm) -> bool:
    if norm.op not in NORMS or not isinstance(norm.shape, Shape) or norm.attrs.get("outputs", 1) != 1:
        return False
    add = norm.inputs[0]
    x = add.shape
    return (add.op == "Add" and add.module is norm.module and isinstance(x, Shape) and len(add.inputs) == 2
            and all(i.shape == x for i in add.inputs) and norm.attrs.get("axis") in (-1, x.ndim - 1))


class FuseResidualNorm:
    name = "fuse_residual_norm"

    def apply(self, mpm) -> None:
        module = mpm.module
        for norm in [i for i in module.instructions if i.op in NORMS]:
            if norm.module is module and _takes(norm):
                self._fuse(module, norm)

    @staticmethod
    def _fuse(module, norm):
        add = norm.inputs[0]
        others = [u for u in add.users if u is not norm]
        attrs = {**norm.attrs, "norm": norm.op, "with_sum": bool(others)}
        # Goes where the norm was: every input is defined by then; users of the sum come later
        # than the Add, so they are rewired to a tuple element placed right after the fused op.
        first_other = min((module.instructions.index(u) for u in others), default=None)
        if first_other is not None and first_other < module.instructions.index(norm):
            anchor = module.instructions[first_other]
        else:
            anchor = norm
        if any(module.instructions.index(p) > module.instructions.index(anchor)
               for p in norm.inputs[1:] if p.module is module):
            return      # the norm's parameters are computed after the sum's first other reader
        fused = module.add_instruction(RESIDUAL_NORM, list(add.inputs) + list(norm.inputs[1:]), attrs,
                                       before=anchor, name=norm.name)
        if not others:
            module.replace_instruction(norm, fused)
            return
        y = module.add_instruction("get_tuple_elem", [fused], {"index": 0}, shape=norm.shape, before=anchor)
        s = module.add_instruction("get_tuple_elem", [fused], {"index": 1}, shape=add.shape, before=anchor)
        module.replace_instruction(norm, y)
        module.replace_instruction(add, s)
