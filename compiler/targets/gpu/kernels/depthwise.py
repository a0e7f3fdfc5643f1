"""Depthwise 2-D convolution (one filter per channel) as one CUDA kernel over channels-last data.

cuDNN runs these as ``conv2d_grouped_direct_kernel``: on the H200 it took 7.86 ms of MobileNet-V2's
10.96 ms per batch of 64 (fp32), where PyTorch's own depthwise kernel does the same 17 convolutions
in 1.48 ms. A depthwise convolution reads each input element KH * KW times and does as many
multiply-adds, so it is bound by memory: each thread here takes a vector of VEC channels (one 4-,
8- or 16-byte load per pixel) over a row of TW output pixels, so one loaded input pixel serves
every output of the row whose window covers it, and a warp's loads are consecutive channels.
Sums are fp32 (also for fp16 data); bias, residual and the activation are applied before the one
store, and an activation of the input (``prologue``) to each element as it is read. Window sizes
and strides are compile-time, so the window loops unroll fully.
On the H200 the kernel ran those 17 convolutions in 0.55 ms, and each MobileNet-V2,
EfficientNet-B0 and ConvNeXt-T layer shape 2.4x to 18x faster than cuDNN's plan
(``benchmarks/layer_kernels_timing.py``).
"""
from __future__ import annotations

import numpy as np

from .raw_source import compile_ahead as compile_ahead_raw
from .raw_source import cuda_source, raw_kernel

_SOURCE = cuda_source("depthwise_nhwc")


def activation_source(relu: bool, clip=None, swish: bool = False, hardswish: bool = False) -> str:
    """The epilogue's activation steps on ``float v``, in ``fused_conv``'s order."""
    steps = []
    if relu:
        steps.append("v = fmaxf(v, 0.0f);")
    low, high = clip or (None, None)
    if low is not None:
        steps.append(f"v = fmaxf(v, {float(low)!r}f);")
    if high is not None:
        steps.append(f"v = fminf(v, {float(high)!r}f);")
    if swish:
        steps.append("v = v / (1.0f + __expf(-v));")
    if hardswish:
        steps.append("v = v * fminf(fmaxf(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);")
    return " ".join(steps)


def _defines(dtype: str, vec: int, tile: int, window: tuple, strides: tuple, bias: bool, residual: bool,
             activation: str, prologue: str, wide: bool) -> dict:
    return {"T": {"float32": "float", "float16": "__half"}[dtype], "VEC": vec, "TW": tile,
            "KH": window[0], "KW": window[1], "SH": strides[0], "SW": strides[1],
            "HAS_BIAS": int(bias), "HAS_RESIDUAL": int(residual),
            "IDX": "long long" if wide else "int", "ACTIVATION": activation,
            "PROLOGUE": prologue}


_OPTIONS = ("-std=c++14",)


def vector_width(channels: int, itemsize: int, arrays) -> int:
    """Channels a thread takes: the widest load of at most 16 bytes that divides the channels and
    every array's start (a view may begin inside an allocation)."""
    vec = 16 // itemsize
    while vec > 1 and (channels % vec or any(a.data.ptr % (vec * itemsize) for a in arrays)):
        vec //= 2
    return vec


def row_tile(stride: int) -> int:
    """Output pixels a thread takes along a row: enough that neighbouring windows share loads,
    few enough that the sums stay in registers."""
    return 4 if stride == 1 else 2


# Threads a launch should have at least: about 132 SMs x 256. With fewer, each thread's long serial
# chain of loads and multiply-adds is the kernel's time: at batch 1 ConvNeXt-T's 7 x 7 layers
# (384 channels at 14 x 14: 2,688 threads of 8 channels x 4 pixels) took 21 us each on the H200,
# the same at every stage whatever its size.
MIN_THREADS = 1 << 15


def launch_shape(rows: int, ow: int, channels: int, vec: int, tile: int) -> tuple[int, int]:
    """(vec, tile) for ``rows`` output rows (N * OH) of ``ow`` pixels and ``channels`` channels:
    the row tile, then the vector, halved while the launch has fewer than ``MIN_THREADS``."""
    def threads(v, t):
        return rows * (-(-ow // t)) * (channels // v)
    while threads(vec, tile) < MIN_THREADS and (tile > 1 or vec > 1):
        if tile > 1:
            tile //= 2
        else:
            vec //= 2
    return vec, tile


def _variant(spec, dtype: str, vec: int, x_size: int, y_size: int, bias: bool, residual: bool,
             activation: str, prologue: str):
    """(defines, launch threads, index type) of the kernel for ``spec`` at channel vector
    ``vec`` at most (``vector_width``): the launch that ``depthwise_nhwc`` and
    ``compile_ahead`` both derive, so the variant compiled ahead is the one launched."""
    n, c, _h, _w = spec.x_shape
    _, _, oh, ow = spec.out_shape
    vec, tile = launch_shape(n * oh, ow, c, vec, row_tile(spec.strides[1]))
    total = n * oh * (-(-ow // tile)) * (c // vec)
    wide = max(x_size, y_size, total) >= 2 ** 31 - 1
    defines = _defines(dtype, vec, tile, tuple(spec.w_shape[2:]), tuple(spec.strides), bias, residual,
                       activation, prologue, wide)
    return defines, total, np.int64 if wide else np.int32


def compile_ahead(spec, activation: str, prologue: str = "") -> None:
    """Start compiling the variant ``depthwise_nhwc`` will launch for ``spec`` (its arrays
    aligned to their vector loads, as fresh buffers are) on a worker thread."""
    n, c, h, w = spec.x_shape
    itemsize = 2 if spec.dtype == "float16" else 4
    defines, _total, _index = _variant(spec, spec.dtype, vector_width(c, itemsize, ()), n * c * h * w,
                                       int(np.prod(spec.out_shape)), spec.bias, spec.residual, activation,
                                       prologue)
    compile_ahead_raw(_SOURCE, "depthwise_nhwc", defines, options=_OPTIONS)


def depthwise_nhwc(x, w_hwc, b, r, y, spec, activation: str, prologue: str = "") -> None:
    """``y`` = activation(depthwise(prologue(x)) + b + r), every array packed channels-last: ``x``
    (N, H, W, C), ``w_hwc`` (KH, KW, C) fp32, ``b`` (C,) or None, ``r`` and ``y`` (N, OH, OW, C);
    ``activation`` and ``prologue`` are ``activation_source`` texts."""
    n, h, wd, c = x.shape
    vec = vector_width(c, x.itemsize, [a for a in (x, b, r, y) if a is not None])
    defines, total, index = _variant(spec, x.dtype.name, vec, x.size, y.size, b is not None, r is not None,
                                     activation, prologue)
    k = raw_kernel(_SOURCE, "depthwise_nhwc", defines, options=_OPTIONS)
    threads = 128
    _, oh, ow, _ = y.shape
    k(((total + threads - 1) // threads,), (threads,),
      (x, w_hwc, _or_null(b), _or_null(r), y, index(total),
       *(np.int32(v) for v in (c, h, wd, oh, ow, spec.pads_begin[0], spec.pads_begin[1]))))


def _or_null(array):
    return array if array is not None else np.uintp(0)
