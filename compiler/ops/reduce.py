"""Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare), ArgMax/ArgMin,
TopK, CumSum/CumProd."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import (axis_attr, fold_inputs, lowest, norm_axes, norm_axis, result, run_values, scalar_int, tuple_shape,
                     unknown_rank, widen)
from .registry import Op, register_op


class Reduce(Op):
    """``axes`` None reduces everything (or nothing, with ``noop_with_empty_axes``)."""

    def from_onnx(self, node):
        rank = node.input(0).shape.ndim
        if "axes" in node.attrs:  # attribute form (before opset 18; ReduceSum before 13)
            attrs, inputs = {"axes": list(node.attrs["axes"])}, [node.input(0)]
        else:
            attrs, inputs = fold_inputs(node, 1, ["axes"])
        if attrs["axes"] is not None:
            attrs["axes"] = sorted(norm_axes(attrs["axes"], rank)) if attrs["axes"] else None
        attrs["keepdims"] = int(node.attrs.get("keepdims", 1))
        noop = int(node.attrs.get("noop_with_empty_axes", 0))
        attrs["noop"] = int(noop and attrs["axes"] is None and not attrs.get("dynamic"))
        if attrs.get("dynamic"):
            attrs["noop_with_empty_axes"] = noop
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs["noop"]:
            return x
        if attrs.get("dynamic"):
            if attrs["keepdims"]:
                return Shape(x.dtype, [None] * x.ndim)
            unknown_rank()
        axes = range(x.ndim) if attrs["axes"] is None else attrs["axes"]
        if attrs["keepdims"]:
            return Shape(x.dtype, [1 if k in axes else n for k, n in enumerate(x.lens)])
        return Shape(x.dtype, [n for k, n in enumerate(x.lens) if k not in axes])

    def compute(self, attrs, x, *args):
        axes = run_values(attrs, (x, *args), 1, ["axes"])["axes"]
        if attrs.get("dynamic") and not axes:
            if attrs.get("noop_with_empty_axes"):
                return x
            axes = None
        if attrs["noop"]:
            return x
        axes = None if axes is None else tuple(norm_axes(axes, x.ndim))
        with np.errstate(divide="ignore"):
            y = self.reduce(widen(x), axes, bool(attrs["keepdims"]))
        return result(y, x.dtype)


def _highest(dtype):
    if dtype == np.bool_:
        return True
    return np.inf if np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16" else np.iinfo(dtype).max


def _log_sum_exp(x, axes, keepdims):
    """log Σ e^x with the largest term factored out, as ONNX Runtime computes it: e^x alone
    overflows float32 from x ≈ 89 and underflows to log(0) below x ≈ -104."""
    top = np.max(x, axis=axes, keepdims=True, initial=lowest(x.dtype))
    shift = np.where(np.isfinite(top), top, 0).astype(x.dtype)
    out = np.log(np.sum(np.exp(x - shift), axis=axes, keepdims=True)) + shift
    return out if keepdims else np.squeeze(out, axis=axes)


_REDUCTIONS = {
    "ReduceSum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "ReduceMax": lambda x, a, k: np.max(x, axis=a, keepdims=k, initial=lowest(x.dtype)),
    "ReduceMin": lambda x, a, k: np.min(x, axis=a, keepdims=k, initial=_highest(x.dtype)),
    "ReduceProd": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "ReduceL1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "ReduceLogSumExp": _log_sum_exp,
    "ReduceSumSquare": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k),
}

for _name, _fn in _REDUCTIONS.items():
    register_op(type(_name, (Reduce,), {"name": _name, "reduce": staticmethod(_fn),
                                        "__doc__": f"ONNX {_name}."}))


class ArgReduce(Op):
    def from_onnx(self, node):
        return {"axis": axis_attr(node, 0),
                "keepdims": int(node.attrs.get("keepdims", 1)),
                "select_last_index": int(node.attrs.get("select_last_index", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, a = inputs[0], attrs["axis"]
        lens = [1 if k == a else n for k, n in enumerate(x.lens)] if attrs["keepdims"] else \
            [n for k, n in enumerate(x.lens) if k != a]
        return Shape("int64", lens)

    def compute(self, attrs, x, *_):
        a = attrs["axis"]
        x = widen(x)
        if attrs["select_last_index"]:
            idx = x.shape[a] - 1 - self.arg(np.flip(x, axis=a), a)
        else:
            idx = self.arg(x, a)
        idx = idx.astype(np.int64)
        return np.expand_dims(idx, a) if attrs["keepdims"] else idx


@register_op
class ArgMax(ArgReduce):
    name = "ArgMax"

    def arg(self, x, a):
        return np.argmax(x, axis=a)


@register_op
class ArgMin(ArgReduce):
    name = "ArgMin"

    def arg(self, x, a):
        return np.argmin(x, axis=a)


@register_op
class TopK(Op):
    """Values and int64 indices of the k largest (or smallest) along ``axis``; equal values
    keep their index order."""

    name = "TopK"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["k"], convert=scalar_int)
        if "k" in node.attrs:  # before opset 10
            attrs["k"] = int(node.attrs["k"])
        attrs["axis"] = axis_attr(node, -1)
        attrs["largest"] = int(node.attrs.get("largest", 1))
        attrs["sorted"] = int(node.attrs.get("sorted", 1))
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        lens = list(x.lens)
        lens[attrs["axis"]] = attrs.get("k")
        return tuple_shape(Shape(x.dtype, lens), Shape("int64", lens))

    def compute(self, attrs, x, *args):
        k = run_values(attrs, (x, *args), 1, ["k"], convert=scalar_int)["k"]
        a = attrs["axis"]
        xm = np.moveaxis(widen(x), a, -1)
        key = xm.astype(np.float64) if not np.issubdtype(xm.dtype, np.floating) else xm
        if attrs["largest"]:
            key = -key
        order = np.argsort(key, axis=-1, kind="stable")[..., :k]
        values = np.take_along_axis(xm, order, axis=-1)
        return (result(np.moveaxis(values, -1, a), x.dtype), np.moveaxis(order, -1, a).astype(np.int64))


class Cumulative(Op):
    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["axis"], convert=scalar_int)
        if attrs["axis"] is not None:
            attrs["axis"] = norm_axis(attrs["axis"], node.input(0).shape.ndim)
        attrs["exclusive"] = int(node.attrs.get("exclusive", 0))
        attrs["reverse"] = int(node.attrs.get("reverse", 0))
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, *args):
        a = norm_axis(run_values(attrs, (x, *args), 1, ["axis"], convert=scalar_int)["axis"], x.ndim)
        xw = widen(x)
        if attrs["reverse"]:
            xw = np.flip(xw, axis=a)
        y = self.scan(xw, a)
        if attrs["exclusive"]:
            y = np.concatenate([np.full_like(np.take(y, [0], axis=a), self.identity),
                                np.take(y, np.arange(y.shape[a] - 1), axis=a)], axis=a)
        if attrs["reverse"]:
            y = np.flip(y, axis=a)
        return result(y, x.dtype)


@register_op
class CumSum(Cumulative):
    name = "CumSum"
    identity = 0

    def scan(self, x, a):
        return np.cumsum(x, axis=a, dtype=x.dtype)


@register_op
class CumProd(Cumulative):
    name = "CumProd"
    identity = 1

    def scan(self, x, a):
        return np.cumprod(x, axis=a, dtype=x.dtype)
