"""Indexing ops: Gather, GatherElements, GatherND, ScatterElements (and the old Scatter),
ScatterND, OneHot, NonZero, Compress."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import axis_attr, fold_inputs, scalar_int
from .registry import Op, register_op


def _wrap(indices: np.ndarray, length) -> np.ndarray:
    """Negative indices count from the end; ``length`` may be an array of lengths, one per
    index component (last axis of ``indices``)."""
    indices = indices.astype(np.int64)
    return np.where(indices < 0, indices + length, indices)


@register_op
class Gather(Op):
    name = "Gather"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, 0)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, idx, a = inputs[0], inputs[1], attrs["axis"]
        return Shape(x.dtype, x.lens[:a] + idx.lens + x.lens[a + 1:])

    def compute(self, attrs, x, indices):
        a = attrs["axis"]
        return np.take(x, _wrap(indices, x.shape[a]), axis=a)


@register_op
class GatherElements(Op):
    name = "GatherElements"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, 0)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[1].with_dtype(inputs[0].dtype)

    def compute(self, attrs, x, indices):
        a = attrs["axis"]
        return np.take_along_axis(x, _wrap(indices, x.shape[a]), axis=a)


@register_op
class GatherND(Op):
    name = "GatherND"

    def from_onnx(self, node):
        return {"batch_dims": int(node.attrs.get("batch_dims", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x, idx, b = inputs[0], inputs[1], attrs["batch_dims"]
        k = idx.lens[-1]
        return Shape(x.dtype, idx.lens[:-1] + x.lens[b + k:])

    def compute(self, attrs, x, indices):
        b = attrs["batch_dims"]
        k = indices.shape[-1]
        batch = int(np.prod(x.shape[:b], dtype=np.int64))
        xb = x.reshape((batch,) + x.shape[b:])
        ib = _wrap(indices.reshape(batch, -1, k), np.array(xb.shape[1:1 + k]))
        rows = np.arange(batch)[:, None]
        picked = xb[(rows,) + tuple(ib[..., j] for j in range(k))]      # (batch, m, *rest)
        return picked.reshape(x.shape[:b] + indices.shape[b:-1] + x.shape[b + k:])


def _scatter(out: np.ndarray, where: tuple, updates: np.ndarray, reduction: str) -> np.ndarray:
    """Write (or combine, element by element in order) ``updates`` into ``out[where]``."""
    if reduction == "none":
        out[where] = updates
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
        ufunc.at(out, where, updates)  # unbuffered: repeated indices accumulate
    return out


@register_op
class ScatterElements(Op):
    name = "ScatterElements"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, 0), "reduction": node.attrs.get("reduction", "none")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, indices, updates):
        a = attrs["axis"]
        where = list(np.indices(indices.shape, sparse=True))
        where[a] = _wrap(indices, x.shape[a])
        return _scatter(x.copy(), tuple(where), updates, attrs["reduction"])


@register_op
class Scatter(ScatterElements):
    """The deprecated Scatter (opset 9-10): ScatterElements without reduction."""

    name = "Scatter"


@register_op
class ScatterND(Op):
    name = "ScatterND"

    def from_onnx(self, node):
        return {"reduction": node.attrs.get("reduction", "none")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, indices, updates):
        k = indices.shape[-1]
        idx = _wrap(indices, np.array(x.shape[:k]))
        return _scatter(x.copy(), tuple(idx[..., j] for j in range(k)), updates, attrs["reduction"])


@register_op
class OneHot(Op):
    name = "OneHot"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["depth"], convert=scalar_int)
        if "dynamic" in attrs:
            inputs = [inputs[0], node.input(2), inputs[1]]  # indices, values, depth
        else:
            inputs = [inputs[0], node.input(2)]
        attrs["axis"] = axis_attr(node, -1, rank=node.input(0).shape.ndim + 1)  # the new axis
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        lens = list(inputs[0].lens)
        lens.insert(attrs["axis"], attrs.get("depth"))
        return Shape(inputs[1].dtype, lens)

    def compute(self, attrs, indices, values, *depth):
        d = scalar_int(depth[0]) if depth else attrs["depth"]
        idx = _wrap(indices, d)
        hot = np.expand_dims(idx, attrs["axis"]) == np.arange(d).reshape(
            [-1 if k == attrs["axis"] else 1 for k in range(idx.ndim + 1)])
        return np.where(hot, values[1], values[0]).astype(values.dtype)


@register_op
class NonZero(Op):
    name = "NonZero"

    def shape(self, attrs, inputs, literals):
        return Shape("int64", (inputs[0].ndim, None))

    def compute(self, attrs, x):
        return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


@register_op
class Compress(Op):
    name = "Compress"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, None)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs["axis"] is None:
            return Shape(x.dtype, (None,))
        lens = list(x.lens)
        lens[attrs["axis"]] = None
        return Shape(x.dtype, lens)

    def compute(self, attrs, x, condition):
        return np.compress(condition, x, axis=attrs["axis"])




@register_op
class ReverseSequence(Op):
    """Reverse the first sequence_lens[b] elements along ``time_axis`` of each batch entry."""

    name = "ReverseSequence"

    def from_onnx(self, node):
        return {"batch_axis": int(node.attrs.get("batch_axis", 1)),
                "time_axis": int(node.attrs.get("time_axis", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, lens):
        y = x.copy()
        b_axis, t_axis = attrs["batch_axis"], attrs["time_axis"]
        for b, n in enumerate(lens.astype(np.int64)):
            index = [slice(None)] * x.ndim
            index[b_axis] = b
            index[t_axis] = slice(0, int(n))
            part = x[tuple(index)]
            axis = t_axis - (1 if b_axis < t_axis else 0)
            y[tuple(index)] = np.flip(part, axis=axis)
        return y


@register_op
class TensorScatter(Op):
    """Write ``update`` into a cache along ``axis`` at each batch entry's write index (modulo
    the cache length in circular mode)."""

    name = "TensorScatter"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, -2),
                "mode": node.attrs.get("mode", "linear")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, cache, update, write_indices=None):
        a = attrs["axis"]
        out = cache.copy()
        starts = np.zeros(cache.shape[0], np.int64) if write_indices is None else write_indices.astype(np.int64)
        for prefix in np.ndindex(*cache.shape[:a]):
            for t in range(update.shape[a]):
                pos = int(starts[prefix[0]]) + t
                if attrs["mode"] == "circular":
                    pos %= cache.shape[a]
                out[prefix + (pos,)] = update[prefix + (t,)]
        return out
