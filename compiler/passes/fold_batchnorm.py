"""Inference batch normalisation folded away.

``BatchNormalization(Conv(x, W, b))`` with literal statistics becomes ``Conv(x, W', b')`` with
``W' = W * a`` and ``b' = (b - mean) * a + beta`` per output channel, ``a = gamma / sqrt(var +
eps)``. A batch norm that follows anything else becomes ``x * a + c`` (two broadcasting literals
that pointwise fusion folds into its neighbours). Arithmetic is in float64, stored in the
original type.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape


def _all_literal(ins, first, count) -> bool:
    return all(k < len(ins.inputs) and ins.inputs[k].op == LITERAL for k in range(first, first + count))


def _literals(ins, first, count):
    if not _all_literal(ins, first, count):
        return None
    return [np.asarray(ins.inputs[k].value, dtype=np.float64) for k in range(first, first + count)]


class FoldBatchNorm:
    name = "fold_batchnorm"

    def apply(self, mpm) -> None:
        module = mpm.module
        for bn in [i for i in module.instructions if i.op == "BatchNormalization"]:
            if not isinstance(bn.shape, Shape) or bn.attrs.get("training_mode"):
                continue
            stats = _literals(bn, 1, 4)
            if stats is None:
                continue
            gamma, beta, mean, var = stats
            a = gamma / np.sqrt(var + float(bn.attrs.get("epsilon", 1e-5)))
            shift = beta - mean * a
            conv = bn.inputs[0]
            if (conv.op == "Conv" and conv.module is module and len(conv.users) == 1
                    and _all_literal(conv, 1, len(conv.inputs) - 1)):
                # (a check only: converting every weight tensor to float64 here cost ResNet-50's
                # compile 0.05 s; _into_conv converts the one it folds)
                self._into_conv(module, conv, bn, a, shift)
            else:
                self._to_affine(module, bn, a, shift)

    @staticmethod
    def _into_conv(module, conv, bn, a, shift):
        w = np.asarray(conv.inputs[1].value)
        k = w.shape[0]
        b = np.asarray(conv.inputs[2].value, np.float64) if len(conv.inputs) > 2 else np.zeros(k)
        w2 = (w.astype(np.float64) * a.reshape((k,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        b2 = ((b - 0) * a + shift).astype(w.dtype)
        w_lit = module.add_literal(w2, before=conv)
        b_lit = module.add_literal(b2, before=conv)
        fused = module.add_instruction("Conv", [conv.inputs[0], w_lit, b_lit], dict(conv.attrs),
                                       shape=bn.shape, before=bn, name=conv.name)
        module.replace_instruction(bn, fused)
        module.remove_instruction(bn)
        module.remove_instruction(conv)

    @staticmethod
    def _to_affine(module, bn, a, shift):
        x = bn.inputs[0]
        rank = x.shape.ndim
        bshape = (1, -1) + (1,) * max(rank - 2, 0) if rank >= 2 else (-1,)
        dtype = bn.shape.dtype
        a_lit = module.add_literal(a.reshape(bshape).astype(dtype), before=bn)
        s_lit = module.add_literal(shift.reshape(bshape).astype(dtype), before=bn)
        mul = module.add_instruction("Mul", [x, a_lit], shape=Shape(dtype, x.shape.lens), before=bn)
        add = module.add_instruction("Add", [mul, s_lit], shape=bn.shape, before=bn, name=bn.name)
        module.replace_instruction(bn, add)
        module.remove_instruction(bn)
