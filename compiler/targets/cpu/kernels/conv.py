"""2-D convolution as one (batched) BLAS matrix product over an im2col buffer.

The columns buffer has rows (C, kh, kw) and columns (oh, ow), so ``W[M, C*kh*kw] @ cols`` gives
the output directly in NCHW. Groups (ResNeXt, depthwise) are a batch dimension of the same
matmul. Filling the buffer copies one strided slice per kernel tap (kh*kw slices), never loops
over elements. 1×1 stride-1 convolutions need no buffer at all. ``FusedConv`` adds the bias, a
residual and ReLU in place on the product.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL

from .common import padder, plain_static


def _prepare(ins):
    if not plain_static(ins, 4) or ins.inputs[1].op != LITERAL:
        return None
    a = ins.attrs
    n, c, h, w = ins.inputs[0].shape.lens
    m = ins.shape.lens[1]
    oh, ow = ins.shape.lens[2:]
    kh, kw = a["kernel_shape"]
    sh, sw = a["strides"]
    dh, dw = a["dilations"]
    p = a["pads"]
    g = a["group"]
    dtype = np.dtype(ins.shape.dtype)
    cg = c // g
    weights = np.ascontiguousarray(ins.inputs[1].value.astype(dtype, copy=False).reshape(g, m // g, cg * kh * kw))
    pad = padder((n, c, h, w), (p[0], p[1], p[2], p[3]), 0, dtype)
    pointwise = kh == kw == 1 and sh == sw == 1 and not any(p)
    cols = None if pointwise else np.empty((n, c, kh, kw, oh, ow), dtype=dtype)

    def product(x):
        if pointwise:
            view = x.reshape(n, g, cg, h * w)
        else:
            xp = pad(x)
            for i in range(kh):
                for j in range(kw):
                    cols[:, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                          j * dw:j * dw + sw * (ow - 1) + 1:sw]
            view = cols.reshape(n, g, cg * kh * kw, oh * ow)
        return np.matmul(weights, view).reshape(n, m, oh, ow)
    return product, dtype


def conv_kernel(ins):
    prepared = _prepare(ins)
    if prepared is None:
        return None
    product, dtype = prepared
    bias = _bias(ins, 2, dtype)

    def run(x, w, b=None):
        y = product(x)
        if bias is not None:
            y += bias
        elif b is not None:
            y += b.reshape(1, -1, 1, 1)
        return y
    return run


def fused_conv_kernel(ins):
    prepared = _prepare(ins)
    if prepared is None:
        return None
    product, dtype = prepared
    bias = _bias(ins, 2, dtype)
    relu = ins.attrs.get("relu", False)

    def run(x, w, b, residual=None):
        y = product(x)
        y += bias if bias is not None else b.reshape(1, -1, 1, 1)
        if residual is not None:
            y += residual
        if relu:
            np.maximum(y, 0, out=y)
        return y
    return run


def _bias(ins, index: int, dtype):
    if len(ins.inputs) > index and ins.inputs[index].op == LITERAL:
        return ins.inputs[index].value.astype(dtype, copy=False).reshape(1, -1, 1, 1)
    return None
