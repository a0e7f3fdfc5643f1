"""Lowerings of reductions (ReduceSum, ReduceMean, ... accumulating fp16 data in fp32) and
ArgMax/ArgMin."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .lowering import lowers

ACC = {"float16": "float32"}   # reductions accumulate fp16 data in fp32


def _static(shape) -> bool:
    return isinstance(shape, Shape) and shape.static


def _axes(ins, rank):
    if "dynamic" in ins.attrs and "axes" in ins.attrs["dynamic"]:
        return "dynamic"
    axes = ins.attrs.get("axes")
    if axes is None:
        if int(ins.attrs.get("noop_with_empty_axes", 0)):
            return ()
        return tuple(range(rank))
    axes = [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes).reshape(-1)]
    if not axes and int(ins.attrs.get("noop_with_empty_axes", 0)):
        return ()
    return tuple(axes) if axes else tuple(range(rank))


_REDUCERS = {
    "ReduceSum": lambda xp, x, ax, kd, acc: xp.sum(x, axis=ax, keepdims=kd, dtype=acc),
    "ReduceMean": lambda xp, x, ax, kd, acc: xp.mean(x, axis=ax, keepdims=kd, dtype=acc),
    "ReduceMax": lambda xp, x, ax, kd, acc: xp.max(x, axis=ax, keepdims=kd),
    "ReduceMin": lambda xp, x, ax, kd, acc: xp.min(x, axis=ax, keepdims=kd),
    "ReduceProd": lambda xp, x, ax, kd, acc: xp.prod(x, axis=ax, keepdims=kd, dtype=acc),
    "ReduceL2": lambda xp, x, ax, kd, acc: xp.sqrt(xp.sum(xp.square(x.astype(acc or x.dtype)), axis=ax, keepdims=kd)),
    "ReduceL1": lambda xp, x, ax, kd, acc: xp.sum(xp.abs(x.astype(acc or x.dtype)), axis=ax, keepdims=kd),
    "ReduceSumSquare": lambda xp, x, ax, kd, acc: xp.sum(xp.square(x.astype(acc or x.dtype)), axis=ax, keepdims=kd),
    "ReduceLogSumExp": lambda xp, x, ax, kd, acc: _logsumexp(xp, x.astype(acc or x.dtype), ax, kd),
    "ReduceLogSum": lambda xp, x, ax, kd, acc: xp.log(xp.sum(x.astype(acc or x.dtype), axis=ax, keepdims=kd)),
}


def _logsumexp(xp, x, ax, kd):
    m = xp.max(x, axis=ax, keepdims=True)
    out = xp.log(xp.sum(xp.exp(x - m), axis=ax, keepdims=True)) + m
    return out if kd else xp.squeeze(out, axis=ax)


@lowers(*_REDUCERS)
def _reduce(ins, L):
    xp = L.xp
    x = ins.inputs[0].shape
    axes = _axes(ins, x.ndim)
    if axes == "dynamic" or not _static(ins.shape):
        return None
    keepdims = bool(int(ins.attrs.get("keepdims", 1)))
    dtype = ins.shape.dtype
    acc = ACC.get(dtype)
    if x.dtype.startswith("int") and ins.op in ("ReduceSum", "ReduceProd"):
        acc = x.dtype
    fn = _REDUCERS[ins.op]
    lens = tuple(ins.shape.lens)
    if axes == ():
        return lambda v, *rest: v
    return lambda v, *rest: fn(xp, v, axes, keepdims, acc).astype(dtype, copy=False).reshape(lens)


@lowers("ArgMax", "ArgMin")
def _argmax(ins, L):
    xp = L.xp
    rank = ins.inputs[0].shape.ndim
    axis = int(ins.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    keepdims = bool(int(ins.attrs.get("keepdims", 1)))
    last = bool(int(ins.attrs.get("select_last_index", 0)))
    f = xp.argmax if ins.op == "ArgMax" else xp.argmin
    n = ins.inputs[0].shape.lens[axis]

    def arg(x):
        if last:
            r = n - 1 - f(xp.flip(x, axis=axis), axis=axis)
        else:
            r = f(x, axis=axis)
        r = r.astype(np.int64)
        return xp.expand_dims(r, axis) if keepdims else r
    return arg

