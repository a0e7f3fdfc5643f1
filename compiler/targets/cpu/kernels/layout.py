"""Ops that only relabel an array's lengths (Reshape, Squeeze, Unsqueeze, Flatten, Identity):
with static shapes the result's lengths are known at lowering, so a run is one ``reshape``
(a view; no shape arithmetic, no run-time shape input read). Transpose is one ``transpose``
(a view), Cast one ``copyto`` into a kept buffer."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import output_buffer

RELABELS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity")


def relabel_kernel(ins):
    x = ins.inputs[0].shape if ins.inputs else None
    out = ins.shape
    if not (isinstance(x, Shape) and isinstance(out, Shape) and x.static and out.static):
        return None
    if x.dtype != out.dtype or x.elements() != out.elements():
        return None
    lens = tuple(out.lens)
    return lambda x, *shape_input: x.reshape(lens)


def transpose_kernel(ins):
    perm = tuple(ins.attrs["perm"])
    return lambda x: x.transpose(perm)


NUMERIC = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "bool")


def cast_kernel(ins):
    """Cast between NumPy's own numeric types (what ``astype`` does), into a kept buffer."""
    x, to = ins.inputs[0].shape, ins.attrs["to"]
    if not (isinstance(x, Shape) and x.static) or x.dtype not in NUMERIC or to not in NUMERIC or to == "bool":
        return None
    buffer = output_buffer(ins.shape.lens, to)

    def run(value):
        out = buffer()
        np.copyto(out, value, casting="unsafe")
        return out
    return run
