"""Ops that only relabel an array's lengths (Reshape, Squeeze, Unsqueeze, Flatten, Identity):
with static shapes the result's lengths are known at lowering, so a run is one ``reshape``
(a view; no shape arithmetic, no run-time shape input read). Transpose is one ``transpose``
(a view), Cast one ``copyto`` into a kept buffer; Slice with literal bounds one indexing (a view),
Concat one ``concatenate`` and ReduceMean/ReduceSum one reduction, into kept buffers."""
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


def slice_kernel(ins):
    """Slice with literal starts/ends/axes/steps: the index worked out once at lowering."""
    from compiler.ops.slice_pad import axes_steps, slice_bounds
    x = ins.inputs[0].shape
    if ins.attrs.get("dynamic") or not (isinstance(x, Shape) and x.static):
        return None
    axes, steps = axes_steps(ins.attrs, x.ndim)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, ins.attrs["starts"], ins.attrs["ends"], steps):
        s, e = slice_bounds(x.lens[a], s, e, st)
        index[a] = slice(s, None if e < 0 else e, st)
    index = tuple(index)
    return lambda value, *bounds: value[index]


def concat_kernel(ins):
    shapes = [ins.shape] + [i.shape for i in ins.inputs]
    if not all(isinstance(s, Shape) and s.static and s.dtype == ins.shape.dtype for s in shapes):
        return None
    axis = ins.attrs["axis"]
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    return lambda *parts: np.concatenate(parts, axis=axis, out=buffer())


def reduce_kernel(ins):
    """ReduceMean/ReduceSum over literal axes of a float tensor, into a kept buffer."""
    x = ins.inputs[0].shape
    a = ins.attrs
    if a.get("dynamic") or a.get("noop") or len(ins.inputs) != 1 or not (isinstance(x, Shape) and x.static) \
            or x.dtype not in ("float32", "float64"):
        return None
    axes = tuple(range(x.ndim)) if a["axes"] is None else tuple(a["axes"])
    keepdims = bool(a["keepdims"])
    fn = np.mean if ins.op == "ReduceMean" else np.sum
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    return lambda value: fn(value, axis=axes, keepdims=keepdims, out=buffer())
