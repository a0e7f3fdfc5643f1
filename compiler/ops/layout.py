"""Ops that rearrange elements without computing new values: Flatten, Reshape, Transpose,
Squeeze, Unsqueeze, Expand, Tile, DepthToSpace, SpaceToDepth, Trilu."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import (ValueNeeded, attr_or_literal_ints, broadcast_lens, fold_inputs, norm_axes, run_values,
                     scalar_int, unknown_rank)
from .registry import Op, register_op


def _prod(lens):
    return None if any(n is None for n in lens) else int(np.prod(lens, dtype=np.int64))


@register_op
class Flatten(Op):
    name = "Flatten"

    def from_onnx(self, node):
        rank = node.input(0).shape.ndim
        axis = int(node.attrs.get("axis", 1))
        return {"axis": axis + rank if axis < 0 else axis}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        lens, a = inputs[0].lens, attrs["axis"]
        return Shape(inputs[0].dtype, (_prod(lens[:a]), _prod(lens[a:])))

    def compute(self, attrs, x):
        a = attrs["axis"]
        return x.reshape(int(np.prod(x.shape[:a], dtype=np.int64)), -1)


def reshape_lens(in_lens, shape, allowzero: int):
    """Resolve 0 (copy the input's length, unless ``allowzero``) and -1 (infer) in ``shape``."""
    out = [in_lens[k] if (n == 0 and not allowzero) else n for k, n in enumerate(shape)]
    total = _prod(in_lens)
    if out.count(-1) > 1:
        raise ValueError(f"shape {list(shape)} has more than one -1")
    if -1 in out:
        known = _prod([n for n in out if n != -1])
        k = out.index(-1)
        out[k] = None if known is None or total is None else (total // known if known else 0)
    count = _prod(out)
    if total is not None and count is not None and count != total:
        raise ValueError(f"cannot reshape {list(in_lens)} ({total} elements) to {list(shape)}")
    return out


@register_op
class Reshape(Op):
    name = "Reshape"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["shape"])
        attrs["allowzero"] = int(node.attrs.get("allowzero", 0))
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        if attrs.get("shape") is None:
            n = inputs[1].lens[0]
            return Shape(inputs[0].dtype, [None] * (n or 0)) if n is not None else unknown_rank()
        return Shape(inputs[0].dtype, reshape_lens(inputs[0].lens, attrs["shape"], attrs["allowzero"]))

    def compute(self, attrs, x, *args):
        shape = run_values(attrs, (x, *args), 1, ["shape"])["shape"]
        return x.reshape(reshape_lens(x.shape, shape, attrs["allowzero"]))


@register_op
class Transpose(Op):
    name = "Transpose"

    def from_onnx(self, node):
        rank = node.input(0).shape.ndim
        perm = node.attrs.get("perm") or list(range(rank))[::-1]
        return {"perm": norm_axes(perm, rank)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return Shape(inputs[0].dtype, [inputs[0].lens[p] for p in attrs["perm"]])

    def compute(self, attrs, x):
        return np.transpose(x, attrs["perm"])


def _axes_from(node, rank_of):
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input since; normalised."""
    axes = attr_or_literal_ints(node, "axes", 1, "axes")
    if axes is None:
        return None
    return sorted(norm_axes(axes, rank_of(len(axes))))


@register_op
class Squeeze(Op):
    name = "Squeeze"

    def from_onnx(self, node):
        x = node.input(0)
        axes = _axes_from(node, lambda n: x.shape.ndim)
        if axes is None:
            if not x.shape.static:
                raise ValueNeeded("which axes have length 1 is only known at run time")
            axes = [k for k, n in enumerate(x.shape.lens) if n == 1]
        return {"axes": axes}, [x]

    def shape(self, attrs, inputs, literals):
        lens = inputs[0].lens
        return Shape(inputs[0].dtype, [n for k, n in enumerate(lens) if k not in attrs["axes"]])

    def compute(self, attrs, x):
        return np.squeeze(x, axis=tuple(attrs["axes"]))


@register_op
class Unsqueeze(Op):
    name = "Unsqueeze"

    def from_onnx(self, node):
        x = node.input(0)
        axes = _axes_from(node, lambda n: x.shape.ndim + n)
        if axes is None:
            node.unsupported("axes are required")
        return {"axes": axes}, [x]

    def shape(self, attrs, inputs, literals):
        lens = list(inputs[0].lens)
        for a in attrs["axes"]:
            lens.insert(a, 1)
        return Shape(inputs[0].dtype, lens)

    def compute(self, attrs, x):
        return np.expand_dims(x, tuple(attrs["axes"]))


@register_op
class Expand(Op):
    name = "Expand"

    def from_onnx(self, node):
        return fold_inputs(node, 1, ["shape"])

    def shape(self, attrs, inputs, literals):
        if attrs.get("shape") is None:
            n = inputs[1].lens[0]
            if n is None:
                unknown_rank()
            rank = max(n, inputs[0].ndim)
            lens = [None] * rank
            for k, m in enumerate(inputs[0].lens[::-1]):
                if m != 1:
                    lens[rank - 1 - k] = m
            return Shape(inputs[0].dtype, lens)
        return Shape(inputs[0].dtype, broadcast_lens(inputs[0].lens, attrs["shape"]))

    def compute(self, attrs, x, *args):
        shape = run_values(attrs, (x, *args), 1, ["shape"])["shape"]
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape))).copy()


@register_op
class Tile(Op):
    name = "Tile"

    def from_onnx(self, node):
        return fold_inputs(node, 1, ["repeats"])

    def shape(self, attrs, inputs, literals):
        reps = attrs.get("repeats")
        if reps is None:
            return Shape(inputs[0].dtype, [None] * inputs[0].ndim)
        return Shape(inputs[0].dtype, [None if n is None else n * r for n, r in zip(inputs[0].lens, reps)])

    def compute(self, attrs, x, *args):
        return np.tile(x, run_values(attrs, (x, *args), 1, ["repeats"])["repeats"])


def _block_attrs(node) -> dict:
    """DepthToSpace and SpaceToDepth: the block size and the channel order (DCR or CRD)."""
    return {"blocksize": int(node.attrs["blocksize"]), "mode": node.attrs.get("mode", "DCR")}


@register_op
class DepthToSpace(Op):
    name = "DepthToSpace"

    def from_onnx(self, node):
        return _block_attrs(node), node.present_inputs()

    def shape(self, attrs, inputs, literals):
        n, c, h, w = inputs[0].lens
        b = attrs["blocksize"]
        return Shape(inputs[0].dtype, (n, c // (b * b), h * b, w * b))

    def compute(self, attrs, x):
        n, c, h, w = x.shape
        b = attrs["blocksize"]
        if attrs["mode"] == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return y.reshape(n, c // (b * b), h * b, w * b)


@register_op
class SpaceToDepth(Op):
    name = "SpaceToDepth"

    def from_onnx(self, node):
        return _block_attrs(node), node.present_inputs()

    def shape(self, attrs, inputs, literals):
        n, c, h, w = inputs[0].lens
        b = attrs["blocksize"]
        return Shape(inputs[0].dtype, (n, c * b * b, h // b, w // b))

    def compute(self, attrs, x):
        n, c, h, w = x.shape
        b = attrs["blocksize"]
        y = x.reshape(n, c, h // b, b, w // b, b)
        y = y.transpose(0, 3, 5, 1, 2, 4) if attrs.get("mode", "DCR") == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)


@register_op
class Trilu(Op):
    name = "Trilu"

    def from_onnx(self, node):
        attrs, inputs = fold_inputs(node, 1, ["k"], convert=scalar_int)
        attrs["upper"] = int(node.attrs.get("upper", 1))
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, *args):
        k = run_values(attrs, (x, *args), 1, ["k"], convert=scalar_int)["k"] or 0
        return np.triu(x, k) if attrs["upper"] else np.tril(x, k)
