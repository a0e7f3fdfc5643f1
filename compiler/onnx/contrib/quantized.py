"""ONNX Runtime's quantized operators (its quantizer's QOperator form and dynamic quantization)
as the standard ops that define them: dequantize the inputs, compute in float, quantize the result;
or integer products scaled back to float."""
from __future__ import annotations

from .builder import Builder, Unexpandable, present


def _dequantized(b: Builder, value: int, scale: int, zero_point: int, **attrs) -> str:
    return b.op("DequantizeLinear", present([b.input(value), b.input(scale), b.input(zero_point)]), **attrs)


def _quantize_to_output(b: Builder, x: str, scale: int, zero_point: int, like: int) -> None:
    """Quantize ``x`` into the node's output with its scale and zero point; without a zero point,
    to the element type of input ``like`` (the operator's one quantized type)."""
    zp = b.input(zero_point) or b.op("CastLike", [b.const(0, "int32"), b.input(like)])
    b.op("QuantizeLinear", [x, b.input(scale), zp], b.output(0))


def _binary(op_type: str):
    def expand(node, b: Builder) -> None:
        """QLinear<op>(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)."""
        total = b.op(op_type, [_dequantized(b, 0, 1, 2), _dequantized(b, 3, 4, 5)])
        _quantize_to_output(b, total, 6, 7, 0)
    return expand


def _unary(op_type: str, **fixed):
    def expand(node, b: Builder) -> None:
        """QLinear<op>(X, X_scale, X_zp, Y_scale, Y_zp)."""
        attrs = dict(fixed)
        if op_type == "LeakyRelu":
            attrs["alpha"] = float(b.attr("alpha", 0.01))
        _quantize_to_output(b, b.op(op_type, [_dequantized(b, 0, 1, 2)], **attrs), 3, 4, 0)
    return expand


def global_average_pool(node, b: Builder) -> None:
    """QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp), channels first."""
    if b.attr("channels_last", 0):
        raise Unexpandable("channels_last")
    _quantize_to_output(b, b.op("GlobalAveragePool", [_dequantized(b, 0, 1, 2)]), 3, 4, 0)


def concat(node, b: Builder) -> None:
    """QLinearConcat(Y_scale, Y_zp, X1, X1_scale, X1_zp, X2, ...; axis)."""
    parts = [_dequantized(b, k, k + 1, k + 2) for k in range(2, len(node.input), 3)]
    joined = b.op("Concat", parts, axis=int(b.attr("axis")))
    _quantize_to_output(b, joined, 0, 1, 2)


def _scaled_product(b: Builder, product: str, a_scale: str, b_scale: int, bias: int) -> None:
    """int32 ``product`` to float, times both scales, plus the bias, into the node's output."""
    scale = b.op("Mul", [a_scale, b.input(b_scale)])
    b.rename(b.plus(b.op("Mul", [b.op("Cast", [product], to=1), scale]), b.input(bias)), b.output(0))


def dynamic_quantize_matmul(node, b: Builder) -> None:
    """DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A quantized to uint8 by its own
    range (DynamicQuantizeLinear), an integer product with B, scaled back to float."""
    quantized, a_scale, a_zero = (b.fresh(), b.fresh(), b.fresh())
    b.op("DynamicQuantizeLinear", [b.input(0)], [quantized, a_scale, a_zero])
    product = b.op("MatMulInteger", present([quantized, b.input(1), a_zero, b.input(3)]))
    _scaled_product(b, product, a_scale, 2, 4)


def matmul_integer_to_float(node, b: Builder) -> None:
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?)."""
    product = b.op("MatMulInteger", present([b.input(0), b.input(1), b.input(4), b.input(5)]))
    _scaled_product(b, product, b.input(2), 3, 6)


def qgemm(node, b: Builder) -> None:
    """QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C?, y_scale?, y_zp?; alpha, transA, transB): alpha
    times the product of the dequantized operands, plus C, an int32 bias at scale alpha * a_scale *
    b_scale; quantized with y_scale and y_zp when given, else float. B's scale may be per output column."""
    trans_b = int(b.attr("transB", 0))
    inputs = [_dequantized(b, 0, 1, 2), _dequantized(b, 3, 4, 5, axis=0 if trans_b else 1)]
    alpha = float(b.attr("alpha", 1.0))
    if b.input(6):  # quantized at alpha * a_scale * b_scale, zero point 0
        scale = b.op("Mul", [b.op("Mul", [b.input(1), b.input(4)]), b.like(alpha, b.input(1))])
        inputs.append(b.op("DequantizeLinear", [b.input(6), scale], axis=0))
    attrs = {"alpha": alpha, "transA": int(b.attr("transA", 0)), "transB": trans_b}
    product = b.op("Gemm", inputs, **attrs)
    if b.input(7):
        _quantize_to_output(b, product, 7, 8, 0)
    else:
        b.rename(product, b.output(0))


def average_pool(node, b: Builder) -> None:
    """QLinearAveragePool(X, x_scale, x_zp, y_scale, y_zp; the AveragePool attributes), channels
    first."""
    if b.attr("channels_last", 0):
        raise Unexpandable("channels_last")
    names = ("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides")
    attrs = {k: b.attr(k) for k in names if b.attr(k) is not None}
    _quantize_to_output(b, b.op("AveragePool", [_dequantized(b, 0, 1, 2)], **attrs), 3, 4, 0)


EXPANSIONS = {"QLinearAdd": _binary("Add"), "QLinearMul": _binary("Mul"),
              "QLinearSigmoid": _unary("Sigmoid"), "QLinearLeakyRelu": _unary("LeakyRelu"),
              "QLinearGlobalAveragePool": global_average_pool, "QLinearConcat": concat,
              "QGemm": qgemm, "QLinearAveragePool": average_pool,
              "DynamicQuantizeMatMul": dynamic_quantize_matmul,
              "MatMulIntegerToFloat": matmul_integer_to_float}
