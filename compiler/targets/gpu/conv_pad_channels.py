"""A convolution over a few input channels (an image's three) runs with its channels padded by
zeros to a multiple cuDNN's fast engines take: the input is laid out channels-last with the zeros
in the same copy that lays it out (``kernels/cuda/pad_channels.cu``), the weights once.

On the H200, cuDNN's heuristic gave ResNet-18's first convolution (3 -> 64, 7 x 7, stride 2, b64
fp16) an indexed engine that took 0.38 ms, 31 % of the network's kernel time; PyTorch's own cuDNN
call pads the channels and takes a first-layer kernel in 0.12 ms."""
from __future__ import annotations

import dataclasses

import numpy as np

from .kernels.conv_spec import ConvSpec
from .kernels.raw_source import cuda_source, raw_kernel

# Channels a padded input has: fewer become PADDED_CHANNELS. Four, not eight: on the H200 (fp16,
# bias + ReLU, layout copy included) 3 -> 64 7 x 7 stride 2 at b64 took 430 / 231 / 335 us at 3 / 4 /
# 8 channels, AlexNet's 11 x 11 stride 4 274 / 125 / 204, VGG's 3 x 3 at b32 234 / 172 / 228 us.
PADDED_CHANNELS = 4
_DTYPES = {"float16": "__half"}


def padded_channels(spec: ConvSpec) -> int:
    """The input channels ``spec`` runs with: ``PADDED_CHANNELS`` for an ungrouped channels-last
    2-D fp16 convolution over fewer, else its own. A convolution that adds a residual keeps its own:
    first layers have none, and the padded runner lays out only the input."""
    c = spec.x_shape[1]
    if len(spec.x_shape) == 4 and spec.nhwc and spec.group == 1 and spec.dtype in _DTYPES \
            and not spec.residual and c < PADDED_CHANNELS:
        return PADDED_CHANNELS
    return c


def padded(spec: ConvSpec) -> ConvSpec:
    """``spec`` with its input and weights at ``padded_channels`` (``spec`` itself where those are
    its own)."""
    c = padded_channels(spec)
    if c == spec.x_shape[1]:
        return spec
    n, _c, *sp = spec.x_shape
    k, _cw, *window = spec.w_shape
    return dataclasses.replace(spec, x_shape=(n, c, *sp), w_shape=(k, c, *window))


def pad_weights(xp, w_nhwc, channels: int):
    """Weights laid out (K, kh, kw, C) with zero channels up to ``channels``."""
    out = xp.zeros(w_nhwc.shape[:-1] + (channels,), dtype=w_nhwc.dtype)
    out[..., :w_nhwc.shape[-1]] = w_nhwc
    return out


def pad_input(xp, x, channels: int):
    """``x`` (logical N, C, H, W) as channels-last pixels of ``channels`` channels, the added ones
    zero; returned as a logical (N, channels, H, W) view."""
    n, c, h, w = x.shape
    s_n, s_c, s_h, s_w = (s // x.itemsize for s in x.strides)
    if h > 1 and w > 1 and s_h != w * s_w:      # rows and columns must run as one pixel axis
        x = xp.ascontiguousarray(x)
        s_n, s_c, s_h, s_w = (s // x.itemsize for s in x.strides)
    y = xp.empty((n, h, w, channels), dtype=x.dtype)
    pixels = n * h * w
    wide = max(x.size, y.size) >= 2 ** 31
    index = np.int64 if wide else np.int32
    kernel = raw_kernel(cuda_source("pad_channels"), "perfbot_pad_channels",
                        {"T": _DTYPES[x.dtype.name], "C": c, "CP": channels, "IDX": "long long" if wide else "int"})
    threads = 256
    kernel((-(-pixels // threads),), (threads,),
           (x, y, index(pixels), index(h * w), index(s_n), index(s_c), index(s_w if w > 1 else s_h)))
    return y.transpose(0, 3, 1, 2)
