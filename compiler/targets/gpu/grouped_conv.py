"""Grouped convolutions with few channels per group on the gpu target: ``kernels.grouped``'s
kernel instead of cuDNN's exact fp32 engines, which ran RegNet's and ResNeXt's grouped layers at a
few TFLOP/s (``kernels/grouped.py``). fp32 only: in fp16 cuDNN's tensor-core engines win (on
the H200, with this kernel taking fp16 too, regnet_y_400mf b64 ran 30,553 /s against 42,636 on
cuDNN, resnext50_32x4d b32 10,806 against 20,451). Depthwise convolutions (one channel per group)
have their own kernel (``depthwise_conv``)."""
from __future__ import annotations

from . import depthwise_conv
from .kernels import grouped


def applies(spec) -> bool:
    """Whether convolution ``spec`` is a 2-D channels-last fp32 grouped one the kernel takes."""
    _n, c, *spatial = spec.x_shape
    k, per_group = spec.w_shape[:2]
    return (len(spatial) == 2 and spec.nhwc and not spec.inputs and 1 < spec.group and per_group > 1
            and per_group <= grouped.MAX_GROUP_CHANNELS and c == per_group * spec.group
            and k % spec.group == 0 and spec.dtype == "float32" and tuple(spec.dilations) == (1, 1))


def grouped_runner(xp, spec, attrs, to_nhwc):
    """The runner of grouped ``spec`` (``depthwise_conv.channels_last_runner``)."""
    activation = depthwise_conv.activation_of(spec, attrs)

    def launch(x, w_taps, b, r, y):
        grouped.grouped_nhwc(x, w_taps, b, r, y, spec, activation)
    return depthwise_conv.channels_last_runner(xp, spec, to_nhwc, launch, "grouped-nhwc")
