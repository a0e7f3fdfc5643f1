"""A 1-D convolution runs as the 2-D convolution over a height of 1.

cuDNN's graphs, the channels-last layout and our depthwise, grouped and split-bf16 kernels all take
2-D convolutions; a 1-D one (audio front ends such as Whisper's and wav2vec2's, temporal and
depthwise convolutions of speech and sequence models) fell to the im2col fallback, which pads,
gathers windows and multiplies in float32 even in fp16 mode. Its spec is planned in 2-D
(``planar``), and its runner is fed views of the operands with a height of 1 (``planar_runner``):
no data moves for the change of rank.
"""
from __future__ import annotations

from dataclasses import replace

from .kernels.conv_spec import ConvSpec


def planar(spec: ConvSpec) -> ConvSpec:
    """``spec`` of a 1-D convolution as the 2-D one over a height of 1; other specs as they are."""
    if len(spec.x_shape) != 3:
        return spec
    n, c, length = spec.x_shape
    k, cg, width = spec.w_shape
    return replace(spec, x_shape=(n, c, 1, length), w_shape=(k, cg, 1, width),
                   pads_begin=(0, *spec.pads_begin), pads_end=(0, *spec.pads_end),
                   strides=(1, *spec.strides), dilations=(1, *spec.dilations))


def planar_runner(run, residual: bool):
    """``run``, built for the planar spec of a 1-D convolution, over the 1-D operands: the input,
    the weights and the residual (the last operand, when ``residual``) viewed with a height of 1,
    the result viewed back. The weights' view is made once per weights array, so runners that
    re-lay out weights once (keyed by the array they are given) still do so once."""
    weights = [None, None]      # the weights array, its planar view

    def run_1d(x, w, *rest):
        if weights[0] is not w:
            weights[:] = [w, w[:, :, None, :]]
        if residual:
            rest = (*rest[:-1], rest[-1][:, :, None, :])
        y = run(x[:, :, None, :], weights[1], *rest)
        return y[:, :, 0, :] if y.ndim == 4 else y
    run_1d.path = f"{getattr(run, 'path', 'conv')}-1d"
    if hasattr(run, "capturable"):
        run_1d.capturable = run.capturable
    return run_1d
