"""Gather (embedding lookups, index_select) as one ``np.take`` into a kept buffer; negative
indices count from the end there too."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import output_buffer


def gather_kernel(ins):
    shapes = [ins.shape] + [i.shape for i in ins.inputs]
    if not all(isinstance(s, Shape) and s.static for s in shapes):
        return None
    if not np.issubdtype(np.dtype(ins.inputs[1].shape.dtype), np.integer):
        return None
    axis = ins.attrs["axis"]
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    return lambda data, indices: np.take(data, indices, axis=axis, out=buffer())
