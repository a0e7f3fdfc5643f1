"""2-D convolution as (batched) BLAS matrix products over an im2col buffer, on the cpu target's
threads.

The columns buffer has rows (C, kh, kw) and columns (oh, ow), so ``W[M, C*kh*kw] @ cols`` gives
the output directly in NCHW; groups (ResNeXt, depthwise) are a batch dimension of the same
product. A run has two parallel phases: threads fill the buffer for their channel ranges (one
strided slice copy per kernel tap, never a loop over elements), then multiply their share of
output columns (or output channels, when those outnumber the columns) and apply the epilogue —
bias, residual, ReLU or clip (``fused_conv``) — to it in place while it is in cache. 1×1 stride-1
convolutions need no buffer at all; depthwise ones take ``depthwise``'s tap sums instead.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL

from ..threads import MIN_PARALLEL_COPY, MIN_PARALLEL_MACS, parts_for, run_chunks, split
from .common import clamp, output_buffer, plain_static
from .depthwise import depthwise_conv
from .pointwise import jit_enabled, jitted


def _bias4(ins, g, mg, dtype):
    if len(ins.inputs) > 2 and ins.inputs[2].op == LITERAL:
        return np.ascontiguousarray(ins.inputs[2].value.astype(dtype, copy=False).reshape(1, g, mg, 1))
    return None


def make_conv(ins, fused: bool):
    if not plain_static(ins, 4) or ins.inputs[1].op != LITERAL:
        return None
    a = ins.attrs
    n, c, h, w = ins.inputs[0].shape.lens
    m = ins.shape.lens[1]
    oh, ow = ins.shape.lens[2:]
    kh, kw = a["kernel_shape"]
    sh, sw = a["strides"]
    dh, dw = a["dilations"]
    top, left, bottom, right = a["pads"]
    g = a["group"]
    dtype = np.dtype(ins.shape.dtype)
    cg, mg, p = c // g, m // g, oh * ow
    k = cg * kh * kw
    weights = np.ascontiguousarray(ins.inputs[1].value.astype(dtype, copy=False).reshape(g, mg, k))
    bias4 = _bias4(ins, g, mg, dtype)
    relu = fused and a.get("relu", False)
    low, high = (a.get("clip") or (None, None)) if fused else (None, None)
    act = Activation(relu, low, high, fused and a.get("swish", False), fused and a.get("hardswish", False))
    if g == c == m:
        return _depthwise(ins, weights.reshape(c, kh, kw), bias4, act)
    pointwise = kh == kw == 1 and sh == sw == 1 and not (top or left or bottom or right)
    padded = None
    if top or left or bottom or right:
        padded = np.zeros((n, c, h + top + bottom, w + left + right), dtype=dtype)  # border stays 0
    cols = None if pointwise else np.empty((n, c, kh, kw, oh, ow), dtype=dtype)
    buffer = output_buffer((n, g, mg, p), dtype)
    copy_parts = split(c, 1 if cols is None else parts_for(cols.size, MIN_PARALLEL_COPY))
    workers = parts_for(n * m * k * p, MIN_PARALLEL_MACS)
    if workers == 1:
        product_parts = [("cols", slice(0, p))]
    elif p >= mg:
        product_parts = [("cols", s) for s in split(p, workers, 16)]
    else:
        product_parts = [("rows", s) for s in split(mg, workers, 8)]

    def fill(x, cs):
        src = x
        if padded is not None:
            padded[:, cs, top:top + h, left:left + w] = x[:, cs]
            src = padded
        for i in range(kh):
            for j in range(kw):
                cols[:, cs, i, j] = src[:, cs, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                        j * dw:j * dw + sw * (ow - 1) + 1:sw]

    finish = _epilogue(dtype, act)

    def run(x, wt, b=None, residual=None):
        if pointwise:
            view = x.reshape(n, g, k, p)
        else:
            run_chunks(lambda cs: fill(x, cs), copy_parts)
            view = cols.reshape(n, g, k, p)
        y = buffer()
        bias = bias4 if bias4 is not None else (None if b is None else b.reshape(1, g, mg, 1))
        res = None if residual is None else residual.reshape(n, g, mg, p)

        def part(job):
            axis, s = job
            if axis == "cols":
                out = y[..., s]
                np.matmul(weights, view[..., s], out=out)
                sb = bias
                sr = None if res is None else res[..., s]
            else:
                out = y[:, :, s]
                np.matmul(weights[:, s], view, out=out)
                sb = None if bias is None else bias[:, :, s]
                sr = None if res is None else res[:, :, s]
            finish(out, sb, sr)
        run_chunks(part, product_parts)
        return y.reshape(n, m, oh, ow)
    return run


class Activation:
    """What a fused_conv applies after bias and residual: ReLU, a clamp, SiLU, HardSwish."""

    def __init__(self, relu, low, high, swish, hardswish):
        self.relu, self.low, self.high, self.swish, self.hardswish = relu, low, high, swish, hardswish
        # relu then clip(low, high) is one clamp
        self.lower = (0 if low is None else max(low, 0)) if relu else low

    def apply(self, out):
        if self.lower is not None or self.high is not None:
            clamp(out, self.lower, self.high, out)
        if self.hardswish:
            from .pointwise import OPS
            OPS["HardSwish"](out, {}, out.copy())
        if not self.swish:
            return
        if jit_enabled() and out.dtype == np.float32 and out.flags.c_contiguous:
            flat = out.reshape(-1)
            jitted("jit_math", "swish32_into")(flat, flat)
        else:
            out *= 1 / (1 + np.exp(-out))


def _epilogue(dtype, act):
    """``finish(out, bias, residual)``: bias (1, G, M, 1) and residual (like ``out``) added to
    the product ``out`` (N, G, M, P), either None, then the activation; one compiled pass where
    numba is (float32), else a NumPy call per term."""
    if jit_enabled() and dtype == np.float32:
        bias_residual_clamp = jitted("epilogue_jit", "bias_residual_clamp")
        lo = dtype.type(-np.inf if act.lower is None else act.lower)
        hi = dtype.type(np.inf if act.high is None else act.high)

        def compiled(out, bias, res):
            b = np.zeros(out.shape[1:3], dtype) if bias is None else bias.reshape(out.shape[1:3])
            r = out if res is None else res
            bias_residual_clamp(out, b, r, res is not None, lo, hi, act.swish, act.hardswish)
        return compiled

    def numpy(out, bias, res):
        if bias is not None:
            out += bias
        if res is not None:
            out += res
        act.apply(out)
    return numpy


def _depthwise(ins, weights, bias4, act):
    lens = ins.inputs[0].shape.lens
    conv = depthwise_conv(lens, ins.shape.lens[2:], weights, ins.attrs, weights.dtype)
    fixed = None if bias4 is None else bias4.reshape(-1)

    def run(x, wt, b=None, residual=None):
        y = conv(x, fixed if fixed is not None or b is None else b.reshape(-1))
        if residual is not None:
            y += residual
        act.apply(y)
        return y
    return run


def conv_kernel(ins):
    return make_conv(ins, fused=False)


def fused_conv_kernel(ins):
    return make_conv(ins, fused=True)
