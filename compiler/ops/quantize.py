"""Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and the integer
products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import tuple_shape, widen
from .conv import Conv, conv_attrs
from .registry import Op, register_op


def per_axis(p: np.ndarray, shape, axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point broadcast against ``shape``: scalar, one per ``axis`` index, or one
    per block of ``block_size`` along ``axis``."""
    if p.size == 1:
        return p.reshape(())
    if block_size:
        return np.repeat(p, block_size, axis=axis).take(np.arange(shape[axis]), axis=axis)
    return p.reshape([-1 if k == axis else 1 for k in range(len(shape))])


def saturate(values: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def _qattrs(node):
    rank = node.input(0).shape.ndim
    axis = int(node.attrs.get("axis", 1))  # only read for per-axis scales, so not range-checked
    return {"axis": axis + rank if axis < 0 else axis,
            "block_size": int(node.attrs.get("block_size", 0))}


@register_op
class QuantizeLinear(Op):
    name = "QuantizeLinear"

    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        attrs = _qattrs(node)
        zp = node.input(2)
        out = node.attrs.get("output_dtype")
        attrs["dtype"] = zp.shape.dtype if zp is not None else (dtype_name(int(out)) if out else "uint8")
        if attrs["dtype"] not in ("int8", "uint8", "int16", "uint16", "int32", "uint32"):
            node.unsupported(f"quantizing to {attrs['dtype']}")
        return attrs, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, x, scale, zero_point=None):
        a, b = attrs["axis"], attrs["block_size"]
        # Divide in the input's precision (as the reference does), round half to even, then
        # add the zero point.
        xs = widen(x)
        y = np.rint(xs / per_axis(widen(scale).astype(xs.dtype), x.shape, a, b)).astype(np.float64)
        if zero_point is not None:
            y = y + per_axis(zero_point.astype(np.float64), x.shape, a, b)
        return saturate(y, attrs["dtype"])


@register_op
class DequantizeLinear(Op):
    name = "DequantizeLinear"

    def from_onnx(self, node):
        from compiler.onnx.types import dtype_name
        attrs = _qattrs(node)
        out = node.attrs.get("output_dtype")
        attrs["dtype"] = dtype_name(int(out)) if out else node.input(1).shape.dtype
        return attrs, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0].with_dtype(attrs["dtype"])

    def compute(self, attrs, x, scale, zero_point=None):
        a, b = attrs["axis"], attrs["block_size"]
        q = x.astype(np.float64)
        if zero_point is not None:
            q = q - per_axis(zero_point.astype(np.float64), x.shape, a, b)
        return (q * per_axis(widen(scale).astype(np.float64), x.shape, a, b)).astype(attrs["dtype"])


@register_op
class DynamicQuantizeLinear(Op):
    """uint8 quantization with scale and zero point from the input's range (which includes 0)."""

    name = "DynamicQuantizeLinear"

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        return tuple_shape(x.with_dtype("uint8"), Shape(x.dtype, ()), Shape("uint8", ()))

    def compute(self, attrs, x):
        y, scale, zero = dynamic_uint8(x)
        return y, np.array(scale, dtype=x.dtype), np.array(zero, dtype=np.uint8)


def dynamic_uint8(x: np.ndarray):
    """(uint8 values, scale, zero point) of ``x`` quantized over its own range, 0 included."""
    hi = np.float32(max(0.0, float(x.max()) if x.size else 0.0))
    lo = np.float32(min(0.0, float(x.min()) if x.size else 0.0))
    scale = np.float32(hi - lo if hi != lo else 1.0) / np.float32(255)
    zero = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    return np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.uint8), scale, zero


def _centered(x, zero_point, axis_of_zero=None):
    x = x.astype(np.int32)
    if zero_point is None:
        return x
    zp = zero_point.astype(np.int32)
    if zp.size > 1 and axis_of_zero is not None:
        zp = zp.reshape([-1 if k == axis_of_zero else 1 for k in range(x.ndim)])
    return x - zp


@register_op
class MatMulInteger(Op):
    name = "MatMulInteger"

    def shape(self, attrs, inputs, literals):
        from .matmul import matmul_lens
        return Shape("int32", matmul_lens(inputs[0].lens, inputs[1].lens))

    def compute(self, attrs, a, b, a_zero=None, b_zero=None):
        return np.matmul(_centered(a, a_zero, a.ndim - 2), _centered(b, b_zero, b.ndim - 1)).astype(np.int32)


@register_op
class ConvInteger(Conv):
    name = "ConvInteger"

    def shape(self, attrs, inputs, literals):
        return super().shape(attrs, inputs, literals).with_dtype("int32")

    def compute(self, attrs, x, w, x_zero=None, w_zero=None):
        xc = _centered(x, x_zero).astype(np.int64)
        wc = _centered(w, w_zero, 0).astype(np.int64)
        return super().compute(attrs, xc, wc).astype(np.int32)


@register_op
class QLinearMatMul(Op):
    name = "QLinearMatMul"

    def shape(self, attrs, inputs, literals):
        from .matmul import matmul_lens
        return Shape(inputs[7].dtype, matmul_lens(inputs[0].lens, inputs[3].lens))

    def compute(self, attrs, a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
        acc = np.matmul(_centered(a, a_zero, a.ndim - 2), _centered(b, b_zero, b.ndim - 1))
        scale = widen(a_scale).astype(np.float64) * widen(b_scale) / widen(y_scale)
        return saturate(acc * scale + y_zero.astype(np.float64), y_zero.dtype)


@register_op
class QLinearConv(Conv):
    name = "QLinearConv"

    def from_onnx(self, node):
        return conv_attrs(node, weight=3), node.present_inputs()  # input 1 is x's scale

    def shape(self, attrs, inputs, literals):
        return super().shape(attrs, [inputs[0], inputs[3]], literals).with_dtype(inputs[7].dtype)

    def compute(self, attrs, x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias=None):
        acc = super().compute(attrs, _centered(x, x_zero).astype(np.int64), _centered(w, w_zero, 0).astype(np.int64))
        if bias is not None:
            acc = acc + bias.astype(np.int64).reshape((1, -1) + (1,) * (x.ndim - 2))
        ws = widen(w_scale).astype(np.float64)
        ws = ws.reshape((1, -1) + (1,) * (x.ndim - 2)) if ws.size > 1 else ws
        scale = widen(x_scale).astype(np.float64) * ws / widen(y_scale)
        return saturate(acc * scale + y_zero.astype(np.float64), y_zero.dtype)
