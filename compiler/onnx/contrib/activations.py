"""The GELU family, FusedMatMul and BiasAdd, as ONNX Runtime defines them."""
from __future__ import annotations

from .builder import Builder, Unexpandable


def gelu(node, b: Builder) -> None:
    """Gelu(X): the erf form."""
    b.op("Gelu", [b.input(0)], b.output(0), approximate="none")


def bias_gelu(node, b: Builder) -> None:
    """BiasGelu(A, B) = Gelu(A + B)."""
    b.op("Gelu", [b.op("Add", [b.input(0), b.input(1)])], b.output(0), approximate="none")


def fast_gelu(node, b: Builder) -> None:
    """FastGelu(X, bias?) = the tanh form of Gelu(X + bias)."""
    b.op("Gelu", [b.plus(b.input(0), b.input(1))], b.output(0), approximate="tanh")


def quick_gelu(node, b: Builder) -> None:
    """QuickGelu(X) = X * Sigmoid(alpha * X), alpha 1.702 unless given."""
    x = b.input(0)
    scaled = b.op("Mul", [x, b.like(float(b.attr("alpha", 1.702)), x)])
    b.op("Mul", [x, b.op("Sigmoid", [scaled])], b.output(0))


def bias_add(node, b: Builder) -> None:
    """BiasAdd(X, bias, skip) = X + bias + skip (Stable Diffusion's attention blocks)."""
    b.op("Add", [b.op("Add", [b.input(0), b.input(1)]), b.input(2)], b.output(0))


def fused_matmul(node, b: Builder) -> None:
    """FusedMatMul(A, B) = alpha * op(A) @ op(B), op transposing the last two axes where transA /
    transB say (an Einsum over any batch axes: the rank need not be known here); the
    batch-transposed forms are not expanded."""
    if b.attr("transBatchA", 0) or b.attr("transBatchB", 0):
        raise Unexpandable("transBatchA / transBatchB")
    trans_a, trans_b = b.attr("transA", 0), b.attr("transB", 0)
    inputs = [b.input(0), b.input(1)]
    if trans_a or trans_b:
        equation = f"...{'ji' if trans_a else 'ij'},...{'kj' if trans_b else 'jk'}->...ik"
        product = b.op("Einsum", inputs, equation=equation)
    else:
        product = b.op("MatMul", inputs)
    alpha = float(b.attr("alpha", 1.0))
    if alpha != 1.0:
        product = b.op("Mul", [product, b.like(alpha, product)])
    b.rename(product, b.output(0))


EXPANSIONS = {"Gelu": gelu, "BiasGelu": bias_gelu, "FastGelu": fast_gelu, "QuickGelu": quick_gelu,
              "BiasAdd": bias_add, "FusedMatMul": fused_matmul}
