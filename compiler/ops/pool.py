"""Pools: MaxPool (with optional indices), AveragePool, LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import lowest, result, tuple_shape, widen
from .registry import Op, register_op
from .windows import out_lens, window_attrs, windows


def _kernel_window_attrs(node) -> dict:
    """Kernel shape, strides, dilations and pads (auto_pad resolved) of a pool or unpool node."""
    kernel = [int(k) for k in node.attrs["kernel_shape"]]
    return window_attrs(node, kernel, node.input(0).shape.lens[2:])


class Pool(Op):
    def from_onnx(self, node):
        attrs = _kernel_window_attrs(node)
        attrs["ceil_mode"] = int(node.attrs.get("ceil_mode", 0))
        return attrs, node.present_inputs()

    def out_shape(self, attrs, x: Shape) -> Shape:
        return Shape(x.dtype, (*x.lens[:2], *out_lens(attrs, x.lens[2:], attrs["ceil_mode"])))

    def shape(self, attrs, inputs, literals):
        return self.out_shape(attrs, inputs[0])

    def kernel_axes(self, x):
        nd = x.ndim - 2
        return tuple(range(2 + nd, 2 + 2 * nd))


@register_op
class MaxPool(Pool):
    name = "MaxPool"

    def from_onnx(self, node):
        attrs, inputs = super().from_onnx(node)
        attrs["storage_order"] = int(node.attrs.get("storage_order", 0))
        attrs["indices"] = node.num_outputs > 1
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        y = self.out_shape(attrs, inputs[0])
        return tuple_shape(y, y.with_dtype("int64")) if attrs["indices"] else y

    def compute(self, attrs, x):
        dtype = x.dtype
        x = widen(x)
        win = windows(x, attrs, lowest(x.dtype), bool(attrs["ceil_mode"]))
        y = result(win.max(axis=self.kernel_axes(x)), dtype)
        if not attrs["indices"]:
            return y
        return y, self.indices(attrs, x, win)

    def indices(self, attrs, x, win):
        """Flat index (over N, C, *spatial; row-major, or column-major spatial when
        storage_order is 1) of each window's first maximum."""
        nd = x.ndim - 2
        spatial = x.shape[2:]
        # Positions of every element, windowed the same way (padding → -1).
        count = int(np.prod(spatial))
        if attrs["storage_order"]:
            pos = np.arange(count).reshape(spatial[::-1]).T
        else:
            pos = np.arange(count).reshape(spatial)
        pos_win = windows(np.broadcast_to(pos, (1, 1) + spatial), attrs, -1, bool(attrs["ceil_mode"]))
        flat = win.reshape(win.shape[:2 + nd] + (-1,))
        arg = flat.argmax(axis=-1)
        pos_flat = np.broadcast_to(pos_win.reshape(pos_win.shape[:2 + nd] + (-1,)), flat.shape)
        local = np.take_along_axis(pos_flat, arg[..., None], axis=-1)[..., 0]
        n, c = x.shape[:2]
        base = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * int(np.prod(spatial))
        return (local + base.reshape((n, c) + (1,) * nd)).astype(np.int64)


@register_op
class AveragePool(Pool):
    name = "AveragePool"

    def from_onnx(self, node):
        attrs, inputs = super().from_onnx(node)
        attrs["count_include_pad"] = int(node.attrs.get("count_include_pad", 0))
        return attrs, inputs

    def compute(self, attrs, x):
        dtype = x.dtype
        x = widen(x)
        ceil = bool(attrs["ceil_mode"])
        axes = self.kernel_axes(x)
        total = windows(x, attrs, 0, ceil).sum(axis=axes)
        if attrs["count_include_pad"]:
            # Explicit padding counts; the ceil-mode overhang beyond it does not.
            count = windows(np.ones((1, 1) + x.shape[2:]), attrs, 1, ceil, overhang_fill=0).sum(axis=axes)
        else:
            count = windows(np.ones((1, 1) + x.shape[2:]), attrs, 0, ceil).sum(axis=axes)
        return result(total / count, dtype)


@register_op
class LpPool(Pool):
    name = "LpPool"

    def from_onnx(self, node):
        attrs, inputs = super().from_onnx(node)
        attrs["p"] = int(node.attrs.get("p", 2))
        return attrs, inputs

    def compute(self, attrs, x):
        p = attrs["p"]
        win = windows(widen(x), attrs, 0, bool(attrs["ceil_mode"]))
        return result((np.abs(win) ** p).sum(axis=self.kernel_axes(x)) ** (1.0 / p), x.dtype)


class GlobalPool(Op):
    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        return Shape(x.dtype, (*x.lens[:2], *([1] * (x.ndim - 2))))

    def compute(self, attrs, x):
        axes = tuple(range(2, x.ndim))
        return result(self.reduce(attrs, widen(x), axes), x.dtype)


@register_op
class GlobalAveragePool(GlobalPool):
    name = "GlobalAveragePool"

    def reduce(self, attrs, x, axes):
        return x.mean(axis=axes, keepdims=True)


@register_op
class GlobalMaxPool(GlobalPool):
    name = "GlobalMaxPool"

    def reduce(self, attrs, x, axes):
        return x.max(axis=axes, keepdims=True)


@register_op
class GlobalLpPool(GlobalPool):
    name = "GlobalLpPool"

    def from_onnx(self, node):
        return {"p": int(node.attrs.get("p", 2))}, node.present_inputs()

    def reduce(self, attrs, x, axes):
        p = attrs["p"]
        return (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)


@register_op
class MaxUnpool(Op):
    """Scatter pooled values back to the positions MaxPool's indices name; zeros elsewhere."""

    name = "MaxUnpool"

    def from_onnx(self, node):
        attrs = _kernel_window_attrs(node)
        out = node.literal(2)
        attrs["output_shape"] = None if out is None else [int(n) for n in out]
        inputs = node.present_inputs()[:2] if out is not None else node.present_inputs()
        return attrs, inputs

    def out_lens(self, attrs, x):
        if attrs["output_shape"] is not None:
            return tuple(attrs["output_shape"])
        nd = len(attrs["kernel_shape"])
        p = attrs["pads"]
        return tuple(x.lens[:2]) + tuple(
            None if x.lens[2 + k] is None else (x.lens[2 + k] - 1) * attrs["strides"][k] + attrs["kernel_shape"][k]
            - p[k] - p[k + nd] for k in range(nd))

    def shape(self, attrs, inputs, literals):
        if len(inputs) > 2:
            return Shape(inputs[0].dtype, [None] * inputs[0].ndim)
        return Shape(inputs[0].dtype, self.out_lens(attrs, inputs[0]))

    def compute(self, attrs, x, indices, *out):
        # Indices address the unpooled shape MaxPool saw; a larger output_shape pads its end.
        natural = self.out_lens(dict(attrs, output_shape=None), Shape.of(x))
        y = np.zeros(int(np.prod(natural)), dtype=x.dtype)
        y[indices.reshape(-1)] = x.reshape(-1)
        y = y.reshape(natural)
        shape = [int(n) for n in out[0]] if out else (attrs["output_shape"] or natural)
        full = np.zeros(shape, dtype=x.dtype)
        full[tuple(slice(0, n) for n in natural)] = y
        return full
