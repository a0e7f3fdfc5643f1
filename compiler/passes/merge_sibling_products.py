"""Products of one input by several literal weights made one product by their concatenation:
a transformer's query, key and value projections, or a gated MLP's gate and up projections.

    MatMul(x, W1) [-> Add(b1)],  MatMul(x, W2) [-> Add(b2)],  ...

with each W_i a 2-D literal (K, N_i) of one dtype that nothing else reads, becomes

    MatMul(x, [W1 | W2 | ...]) [-> Add([b1 | b2 | ...])] -> Slice(last axis, 0:N1), Slice(N1:N1+N2), ...

Why: at a few hundred to a few thousand tokens each of these products is too narrow to fill a
large GPU (a 1024-wide output in 128-wide tiles is 8 tile columns), and each is a launch of its
own; their concatenation is one wide GEMM that reads x once. The slices are views on a target
that has them, so what read each product reads its part of the merged result in place.

A product whose sole user is an Add of a literal bias of N_i elements brings that bias into the
merged Add; when only some products have one, the other parts of the merged bias are zeros (the
key projection of Whisper's attention has none). The bias add stays a separate instruction, so
the linear-epilogue fusion that follows takes the merged product and its bias as one GEMM.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL


def _weight(product):
    """The (K, N) literal weight of a MatMul that nothing else reads, or None."""
    x, w = product.inputs
    if w.op != LITERAL or w.shape.ndim != 2 or len(w.users) != 1 or x.shape.ndim < 2:
        return None
    return w


def _bias(product):
    """(the Add, its bias as N values) when the product's sole user adds a literal bias of the
    product's width and dtype; (None, None) otherwise."""
    if len(product.users) != 1 or product.users[0].op != "Add":
        return None, None
    add = product.users[0]
    if add.shape != product.shape or add.module is not product.module:
        return None, None
    bias = add.inputs[1] if add.inputs[0] is product else add.inputs[0]
    width = product.shape.lens[-1]
    if bias.op != LITERAL or np.asarray(bias.value).size != width \
            or bias.shape.dtype != product.shape.dtype:
        return None, None
    return add, np.asarray(bias.value).reshape(-1)


def sibling_groups(module) -> list[list]:
    """Groups of two or more MatMuls of ``module`` that read one input by mergeable weights."""
    by_input: dict = {}
    for ins in module.instructions:
        if ins.op == "MatMul" and _weight(ins) is not None:
            key = (id(ins.inputs[0]), ins.inputs[1].shape.dtype, ins.shape.ndim)
            by_input.setdefault(key, []).append(ins)
    return [group for group in by_input.values() if len(group) > 1]


class MergeSiblingProducts:
    name = "merge_sibling_products"

    def apply(self, mpm) -> None:
        module = mpm.module
        for group in sibling_groups(module):
            self._merge(module, group)

    @staticmethod
    def _merge(module, group) -> None:
        first = min(group, key=module.instructions.index)
        x, dtype = first.inputs[0], first.inputs[1].shape.dtype
        widths = [p.shape.lens[-1] for p in group]
        biases = [_bias(p) for p in group]
        weight = module.add_literal(np.concatenate([np.asarray(p.inputs[1].value) for p in group], axis=1),
                                    before=first)
        merged = module.add_instruction("MatMul", [x, weight], before=first, name=first.name)
        result = merged
        if any(add is not None for add, _ in biases):
            values = [b if b is not None else np.zeros(n, dtype=dtype) for (_, b), n in zip(biases, widths)]
            bias = module.add_literal(np.concatenate(values).astype(dtype), before=first)
            result = module.add_instruction("Add", [merged, bias], before=first, name=f"{first.name}.bias")
        axis, start = merged.shape.ndim - 1, 0
        for product, (add, own_bias), width in zip(group, biases, widths):
            part = module.add_instruction(
                "Slice", [result], {"starts": [start], "ends": [start + width], "axes": [axis], "steps": None},
                before=first, name=f"{product.name}.part")
            start += width
            if own_bias is not None:
                module.replace_instruction(add, part)
            else:
                module.replace_instruction(product, part)
        # the old products, their bias adds and weights have no users now: DCE removes them
