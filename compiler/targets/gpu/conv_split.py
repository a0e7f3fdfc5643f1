"""fp32 convolutions on bf16 tensor cores through split-bf16 operands (``kernels/split_bf16``):
results within ~1e-5 relative of exact fp32 (TF32 is ~1e-3), at tensor-core speed.

Two ways to run one:
- ``split_gemm_conv``: the window gather writes the activations' hi/lo parts directly, cuBLAS runs
  one bf16 GEMM with fp32 accumulation, one epilogue pass adds bias, residual and ReLU. No build
  step (nothing to compile or plan per convolution).
- ``split_cudnn_conv``: the activations are split channel-wise ([hi | hi | lo] channels, channels-
  last; a grouped convolution's group by group), the weights likewise ([hi | lo | hi]), and cuDNN
  runs the convolution over three times the channels as an implicit GEMM with bias, residual and
  ReLU fused: no window matrix in memory, but a cuDNN plan built (once, then kept on disk) per
  convolution.
"""
from __future__ import annotations

from dataclasses import replace

from .kernels import conv as convk
from .kernels import gemm_conv, gemm_lt, split_bf16
from .kernels.channels_last import memory_axes
from .kernels.gemm import available, matmul_split_bf16
from .split_prologue import DeferredPointwise


def applies(spec, on_gpu: bool) -> bool:
    """Whether a split path takes ``spec``: split-cudnn 2-D and 3-D convolutions, ungrouped or of
    two or more channels a group, split-gemm ungrouped 2-D ones (``ops_nn.fp32_paths``)."""
    per_group = spec.w_shape[1]
    return (on_gpu and spec.dtype == "float32" and (spec.group == 1 or per_group > 1)
            and len(spec.x_shape) in (4, 5) and available())


def _split_groups(x, groups: int, lo: int):
    """Channels-last ``x`` (..., C) split group by group: (..., groups * width(C / groups)), each
    group's [hi | hi | lo] (or [hi | lo | hi]) channels together, so that a grouped convolution
    over the split channels sees each group's three parts in its own channels."""
    if groups == 1:
        return split_bf16.along_last(x, lo)
    *lead, c = x.shape
    parts = split_bf16.along_last(x.reshape(*lead, groups, c // groups), lo)
    return parts.reshape(*lead, -1)


def _channels_last(xp, x, to_nhwc):
    """Logical NCHW (or NCDHW) ``x`` as a packed (N, H, W, C) (or (N, D, H, W, C)) array."""
    return to_nhwc(xp, x).transpose(memory_axes(x.ndim))


def _channel_split(xp, to_nhwc, groups: int = 1):
    """x -> its split channels, (N, H, W, width(C)) [hi | hi | lo], group by group for a grouped
    convolution (``_split_groups``): what a split-cudnn convolution, and a split-gemm one without
    windows, read. A deferred pointwise input (``split_prologue``) is computed and split in one
    kernel where its operands allow (ungrouped: that kernel splits whole rows)."""
    def split(x):
        if isinstance(x, DeferredPointwise):
            fused = x.split(split_bf16.LO_LEFT) if groups == 1 else None
            if fused is not None:
                return fused
            x = x.value()
        return _split_groups(_channels_last(xp, x, to_nhwc), groups, split_bf16.LO_LEFT)
    return split


class SharedSplits:
    """One split per run of a value several convolutions split the same way (Inception's branches
    all start with a 1x1 convolution of the block input; a ResNet stage's first block feeds its
    input to two), instead of one per convolution. Keyed by the IR value; an entry holds the
    array it was made from, so a later run (a new array) makes a new split, and is dropped when
    the value's last consumer has taken it."""

    def __init__(self):
        self.consumers: dict = {}
        self.live: dict = {}

    def provider(self, value, make):
        """``make`` (x -> split), shared among every provider of ``value``."""
        self.consumers[value] = self.consumers.get(value, 0) + 1

        def split_of(x):
            wanted = self.consumers[value]
            if wanted < 2:
                return make(x)
            entry = self.live.get(value)
            if entry is None or entry[0] is not x:
                entry = self.live[value] = [x, make(x), 0]
            entry[2] += 1
            if entry[2] >= wanted:
                del self.live[value]
            return entry[1]
        return split_of


def share_input_split(run, shared: SharedSplits, value) -> None:
    """Let ``run`` (a runner from this module) take its input's split from ``shared``: the
    splits of one value by the same groups are one."""
    if getattr(run, "split_of", None) is not None:
        run.split_of = shared.provider((value, run.split_groups), run.split_of)


def split_gemm_conv(xp, spec, has_bias: bool, residual: bool, relu: bool, to_nhwc):
    n, c, h, w = spec.x_shape
    kout, _cg, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    (pt, pl), (pb, pr) = spec.pads_begin, spec.pads_end
    pointwise = kh == kw == 1 and spec.strides == (1, 1) and pt == pl == pb == pr == 0
    weights: dict = {}

    def run(x, wt, *rest):
        key = id(wt)
        if key not in weights:   # weights are parameters: (K, C, kh, kw) -> split (kh*kw*C, K), once
            weights.clear()
            wm = xp.ascontiguousarray(wt.transpose(2, 3, 1, 0).reshape(kh * kw * c, kout))
            weights[key] = (wt, split_bf16.along_rows(wm))
        w3 = weights[key][1]
        if pointwise:
            cols = run.split_of(x).reshape(n * h * w, -1)
        else:
            cols = split_bf16.im2col_left(_channels_last(xp, x, to_nhwc), spec)
        bias = rest[0].reshape(-1) if has_bias else None
        res = _channels_last(xp, rest[-1], to_nhwc).reshape(-1) if residual else None
        y = gemm_lt.fused_matmul(cols, w3, bias, res, relu, split=True)   # (N*OH*OW, K) fp32
        if y is None:
            y = matmul_split_bf16(cols, w3)
            gemm_conv.epilogue(y, bias, res, relu)
        return y.reshape(n, oh, ow, kout).transpose(0, 3, 1, 2)
    run.capturable = True
    run.path = "split-gemm"
    run.split_of = _channel_split(xp, to_nhwc) if pointwise else None
    run.split_groups = 1
    return run


def cudnn_spec(spec):
    """The cuDNN graph's spec for fp32 convolution ``spec`` on split-bf16 operands: each group's
    channels widened to the split's width, channels-last, bf16 inputs."""
    n, _c, *spatial = spec.x_shape
    kout, per_group, *window = spec.w_shape
    c3 = split_bf16.width(per_group)
    return replace(spec, x_shape=(n, spec.group * c3, *spatial), w_shape=(kout, c3, *window), nhwc=True,
                   inputs="bfloat16")


def split_cudnn_conv(xp, spec, has_bias: bool, residual: bool, relu: bool, to_nhwc, options):
    """The cuDNN runner, or None where cuDNN refuses the bf16 graph."""
    if convk.cudnn_module() is None:
        return None
    graph = convk.cudnn_conv(cudnn_spec(spec), options)
    if graph is None:
        return None
    weights: dict = {}

    def run(x, wt, *rest):
        key = id(wt)
        if key not in weights:   # (K, C, kh, kw) -> channels-last (K, kh, kw, 3C) [hi | lo | hi], once
            weights.clear()
            weights[key] = (wt, split_bf16.along_last(wt.transpose(memory_axes(wt.ndim)), split_bf16.LO_RIGHT))
        x3 = run.split_of(x)
        b = xp.ascontiguousarray(rest[0]) if has_bias else None
        r = to_nhwc(xp, rest[-1]) if residual else None
        return graph(x3, weights[key][1], b, r)
    run.capturable = True
    run.path = "split-cudnn"
    run.split_of = _channel_split(xp, to_nhwc, spec.group)
    run.split_groups = spec.group
    return run
