"""Compute each integer or boolean value once: an instruction that repeats an earlier one (the
same op, attributes and inputs) is replaced by it, and so is a small integer or boolean literal
equal to an earlier one.

Expansions write index arithmetic per node: every GroupQueryAttention of a decoder builds the
same key positions, cache rows and mask from the same ``seqlens_k``, once per layer, and what
depends on values fed at run time is not folded on import. Only integer and boolean results are
merged: they are positions, lengths and masks, which no kernel fusion takes as its own operands,
so the float computations the targets fuse keep their shape (a float product read twice would
stop being fused into one of its readers).
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape
from compiler.ops.registry import get_op, has_op
from compiler.ops.structural import STRUCTURAL_OPS
from compiler.passes.rewrite import substitute

SMALL_LITERAL = 64      # elements: larger literals are data, not index constants


def _index_shape(shape) -> bool:
    return isinstance(shape, Shape) and (shape.dtype == "bool" or shape.dtype.startswith(("int", "uint")))


_UNUSABLE = object()


def _frozen(value):
    """``value`` (an attribute) as something hashable, or _UNUSABLE where it has no such form."""
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(v) for v in value)
        return _UNUSABLE if any(i is _UNUSABLE for i in items) else items
    if isinstance(value, dict):
        items = tuple((k, _frozen(v)) for k, v in sorted(value.items()))
        return _UNUSABLE if any(v is _UNUSABLE for _k, v in items) else items
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (str, int, float, bool, bytes, type(None), np.generic)):
        return value
    return _UNUSABLE


def _literal_key(ins):
    value = ins.value
    if value is None or not _index_shape(ins.shape) or np.size(value) > SMALL_LITERAL:
        return None
    array = np.asarray(value)
    return (LITERAL, array.dtype.str, array.shape, array.tobytes())


def _instruction_key(ins):
    if ins.is_builtin or ins.op in STRUCTURAL_OPS or ins.module_inputs or not _index_shape(ins.shape):
        return None
    if not has_op(ins.op) or not getattr(get_op(ins.op), "foldable", True):  # random or stateful
        return None
    attrs = _frozen(ins.attrs)
    if attrs is _UNUSABLE:
        return None
    return (ins.op, attrs, tuple(i.uid for i in ins.inputs), ins.shape)


class MergeIndexDuplicates:
    name = "merge_index_duplicates"

    def apply(self, mpm) -> None:
        module = mpm.module
        first: dict = {}
        for ins in list(module.instructions):
            key = _literal_key(ins) if ins.op == LITERAL else _instruction_key(ins)
            if key is None:
                continue
            earlier = first.setdefault(key, ins)     # keys are hashable: _frozen sees to it
            if earlier is not ins:
                substitute(module, ins, earlier)
