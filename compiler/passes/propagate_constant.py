"""Evaluate instructions whose inputs are all literals at compile time (reference compute)."""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape
from compiler.ops.registry import get_op
from compiler.ops.structural import STRUCTURAL_OPS
from compiler.passes.rewrite import substitute

# A folded result this large would bloat the program more than it saves (Expand of a scalar).
MAX_FOLD_BYTES = 64 << 20


class PropagateConstant:
    name = "propagate_constant"

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in list(module.instructions):
            if not self._foldable(ins):
                continue
            op = get_op(ins.op)
            value = np.asarray(op.compute(ins.attrs, *[i.value for i in ins.inputs]))
            literal = module.add_literal(value.astype(ins.shape.dtype, copy=False), before=ins)
            substitute(module, ins, literal)

    @staticmethod
    def _foldable(ins) -> bool:
        if ins.is_builtin or ins.op in STRUCTURAL_OPS or ins.module_inputs or not ins.inputs:
            return False
        if not isinstance(ins.shape, Shape) or not ins.shape.static or not ins.shape.standard():
            return False
        if not all(i.op == LITERAL for i in ins.inputs) or not ins.users:
            return False
        if not getattr(get_op(ins.op), "foldable", True):  # random or stateful ops
            return False
        return ins.shape.bytes() <= MAX_FOLD_BYTES
