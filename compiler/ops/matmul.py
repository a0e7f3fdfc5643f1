"""Matrix products: MatMul, Gemm, Einsum."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import accumulate, broadcast_lens, result, widen
from .registry import Op, register_op


def matmul_lens(a, b):
    a1, b1 = len(a) == 1, len(b) == 1
    a = (1,) + tuple(a) if a1 else tuple(a)
    b = tuple(b) + (1,) if b1 else tuple(b)
    lens = broadcast_lens(a[:-2], b[:-2]) + (a[-2], b[-1])
    if a1:
        lens = lens[:-2] + lens[-1:]
    if b1:
        lens = lens[:-1]
    return lens


@register_op
class MatMul(Op):
    name = "MatMul"

    def shape(self, attrs, inputs, literals):
        return Shape(inputs[0].dtype, matmul_lens(inputs[0].lens, inputs[1].lens))

    def compute(self, attrs, a, b):
        return result(np.matmul(accumulate(a), accumulate(b)), a.dtype)


@register_op
class Gemm(Op):
    """alpha * A' @ B' + beta * C, where ' transposes when transA/transB is set."""

    name = "Gemm"

    def from_onnx(self, node):
        a = node.attrs
        return {"alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0)),
                "transA": int(a.get("transA", 0)), "transB": int(a.get("transB", 0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        a, b = inputs[0].lens, inputs[1].lens
        m = a[1] if attrs["transA"] else a[0]
        n = b[0] if attrs["transB"] else b[1]
        return Shape(inputs[0].dtype, (m, n))

    def compute(self, attrs, a, b, c=None):
        dtype = a.dtype
        a, b = accumulate(a), accumulate(b)
        a = a.T if attrs["transA"] else a
        b = b.T if attrs["transB"] else b
        y = attrs["alpha"] * (a @ b)
        if c is not None:
            y = y + attrs["beta"] * accumulate(c)
        return result(y, dtype)


def einsum_lens(equation: str, input_lens):
    """Output lengths of an einsum: letters map to lengths, "..." to broadcast dimensions."""
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    letters: dict[str, int | None] = {}
    ellipsis: tuple = ()
    for term, lens in zip(terms, input_lens):
        named = term.replace("...", "")
        n_ell = len(lens) - len(named)
        head, _, tail = term.partition("...")
        if "..." in term:
            ellipsis = broadcast_lens(ellipsis, lens[len(head):len(head) + n_ell])
            dims = list(zip(head, lens[:len(head)])) + list(zip(tail, lens[len(lens) - len(tail):]))
        else:
            dims = list(zip(term, lens))
        for ch, n in dims:
            if letters.get(ch) in (None, 1):
                letters[ch] = n
    if "->" not in equation:
        once = sorted(c for c in letters if lhs.count(c) == 1)
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    head, _, tail = rhs.partition("...")
    if "..." in rhs:
        return tuple(letters[c] for c in head) + tuple(ellipsis) + tuple(letters[c] for c in tail)
    return tuple(letters[c] for c in rhs)


@register_op
class Einsum(Op):
    name = "Einsum"

    def from_onnx(self, node):
        return {"equation": node.attrs["equation"].replace(" ", "")}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return Shape(inputs[0].dtype, einsum_lens(attrs["equation"], [s.lens for s in inputs]))

    def compute(self, attrs, *args):
        return result(np.einsum(attrs["equation"], *(widen(a) for a in args)), args[0].dtype)


@register_op
class Det(Op):
    name = "Det"

    def shape(self, attrs, inputs, literals):
        return Shape(inputs[0].dtype, inputs[0].lens[:-2])

    def compute(self, attrs, x):
        return result(np.linalg.det(widen(x)), x.dtype)
