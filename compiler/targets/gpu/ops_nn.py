"""Lowerings of convolution, pooling and batch normalisation."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import TupleShape

from . import conv_pad_channels, conv_planar, depthwise_conv, grouped_conv, pool_windows
from .global_average import global_average_runner
from .kernels import conv as convk
from .kernels import gemm_conv, gemm_lt
from .kernels import pool as poolk
from .kernels.channels_last import logical_axes, memory_axes
from .lowering import literal_of, lowers


def _conv_pads(attrs, x_lens, w_lens, strides, dilations):
    nsp = len(x_lens) - 2
    pads = attrs.get("pads")
    auto = attrs.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(nsp):
            out = -(-x_lens[2 + i] // strides[i])
            eff = (w_lens[i] - 1) * dilations[i] + 1
            total = max(0, (out - 1) * strides[i] + eff - x_lens[2 + i])
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin, end
    if auto == "VALID" or pads is None:
        return [0] * nsp, [0] * nsp
    pads = [int(p) for p in pads]
    return pads[:nsp], pads[nsp:]


def conv_spec(ins, dtype=None, **epilogue) -> convk.ConvSpec | None:
    """``ins``'s convolution as the lowering plans it (a 1-D one in 2-D: ``conv_planar``)."""
    x, w = ins.inputs[0].shape, ins.inputs[1].shape
    if not (x.static and w.static) or x.ndim < 3:
        return None
    nsp = x.ndim - 2
    a = ins.attrs
    strides = [int(s) for s in (a.get("strides") or [1] * nsp)]
    dilations = [int(s) for s in (a.get("dilations") or [1] * nsp)]
    begin, end = _conv_pads(a, x.lens, w.lens[2:], strides, dilations)
    return conv_planar.planar(convk.ConvSpec(
        tuple(x.lens), tuple(w.lens), tuple(begin), tuple(end), tuple(strides), tuple(dilations),
        int(a.get("group", 1)), dtype or x.dtype, **epilogue))


def cudnn_ok(spec) -> bool:
    """Whether cuDNN's graphs take ``spec``: 2-D (1-D ones planned as 2-D) and 3-D convolutions."""
    return len(spec.x_shape) in (4, 5) and spec.dtype in ("float32", "float16")


def to_nhwc(xp, x):
    """``x`` (logical NCHW, or NCDHW) stored channels-last; no copy when it already is."""
    order = memory_axes(x.ndim)
    if x.transpose(order).flags.c_contiguous:
        return x
    return xp.ascontiguousarray(x.transpose(order)).transpose(logical_axes(x.ndim))


def _epilogue(ins):
    if ins.op == "fused_conv":
        a = ins.attrs
        return bool(a["bias"]), bool(a["residual"]), bool(a["relu"])
    return len(ins.inputs) > 2, False, False


def lowered_conv_spec(ins, on_gpu: bool) -> convk.ConvSpec | None:
    """The spec the convolution lowering plans ``ins`` (a Conv or fused_conv) with: its epilogue,
    channels-last on a GPU (the layout the target keeps convolution nets in)."""
    has_bias, residual, relu = _epilogue(ins)
    nhwc = on_gpu and ins.inputs[0].shape.ndim in (3, 4, 5)
    return conv_spec(ins, bias=has_bias, residual=residual, relu=relu, nhwc=nhwc)


@lowers("Conv", "fused_conv")
def _conv(ins, L):
    run = _planned_conv(ins, L)
    if run is None or ins.inputs[0].shape.ndim != 3:
        return run
    return conv_planar.planar_runner(run, residual=_epilogue(ins)[1])


def _planned_conv(ins, L):
    """The runner of ``ins`` over operands of its planned spec's rank."""
    has_bias, residual, relu = _epilogue(ins)
    xp = L.xp
    on_gpu = L.backend.on_gpu
    spec = lowered_conv_spec(ins, on_gpu)
    if spec is None:
        return None
    if on_gpu and depthwise_conv.applies(spec):
        return depthwise_conv.depthwise_runner(xp, spec, ins.attrs, to_nhwc)
    run = _conv_runner(ins, L, spec, has_bias, residual, relu)
    steps = ins.attrs.get("prologue")
    if run is None or not steps:
        return run
    from compiler.passes.fuse_conv_epilogue import activate

    # Only the depthwise kernel applies a prologue itself (``depthwise_prologue`` folds none into
    # other convolutions); a program that names one elsewhere still runs, activation first.
    def run_after_prologue(x, *rest):
        return run(activate(steps, x), *rest)
    run_after_prologue.path = run.path
    return run_after_prologue


def _conv_runner(ins, L, spec, has_bias, residual, relu):
    """The runner of a convolution our depthwise kernel does not take."""
    xp = L.xp
    on_gpu = L.backend.on_gpu
    paths = fp32_paths(spec, on_gpu)
    if paths:
        from . import conv_split
        from .conv_choice import fp32_conv
        makers = {
            "split-gemm": lambda: conv_split.split_gemm_conv(xp, spec, has_bias, residual, relu, to_nhwc),
            "split-cudnn": lambda: conv_split.split_cudnn_conv(xp, spec, has_bias, residual, relu, to_nhwc,
                                                              L.options),
            "grouped": lambda: grouped_conv.grouped_runner(xp, spec, ins.attrs, to_nhwc),
            "gemm": lambda: _gemm_conv(ins, L, spec, has_bias, residual, relu),
            "cudnn": lambda: _cudnn_runner(ins, L, spec, has_bias, residual, relu)}
        run = fp32_conv(spec, {p: makers[p] for p in paths}, L.options)
        if run is not None:
            conv_split.share_input_split(run, L.shared_splits, ins.inputs[0])
            return run
    run = _cudnn_runner(ins, L, spec, has_bias, residual, relu) if on_gpu else None
    if run is not None:
        return run
    out_lens = tuple(ins.shape.lens)
    k = spec.w_shape[0]
    nsp = len(spec.x_shape) - 2

    def run_im2col(x, w, *rest):
        y = convk.im2col_conv(xp, x, w, spec)
        if has_bias:
            y = y + rest[0].reshape((1, k) + (1,) * nsp)
        if residual:
            y = y + rest[-1]
        if relu:
            y = xp.maximum(y, 0)
        return y.reshape(out_lens).astype(ins.shape.dtype, copy=False)
    run_im2col.path = "im2col"
    return run_im2col


def _cudnn_runner(ins, L, spec, has_bias, residual, relu):
    """The convolution as one cuDNN graph (channels-last where cuDNN takes it), or None."""
    if not cudnn_ok(spec):
        return None
    xp = L.xp
    spec = conv_pad_channels.padded(spec)
    nhwc = spec.nhwc
    graph = convk.cudnn_conv(spec, L.options)
    if graph is None and nhwc:
        spec = conv_spec(ins, bias=has_bias, residual=residual, relu=relu, nhwc=False)
        nhwc = False
        graph = convk.cudnn_conv(spec, L.options)
    if graph is None:
        return None
    weights: dict = {}
    channels = spec.x_shape[1]
    pad = channels != ins.inputs[0].shape.lens[1]

    def run_cudnn(x, w, *rest):
        b = rest[0] if has_bias else None
        r = rest[-1] if residual else None
        key = id(w)
        if key not in weights:  # weights are literals: re-laid out once
            weights.clear()
            wl = xp.ascontiguousarray(w.transpose(memory_axes(w.ndim))) if nhwc else xp.ascontiguousarray(w)
            weights[key] = (w, conv_pad_channels.pad_weights(xp, wl, channels) if pad else wl)
        wl = weights[key][1]
        if pad:
            x = conv_pad_channels.pad_input(xp, x, channels)
        elif nhwc:
            x = to_nhwc(xp, x)
            r = to_nhwc(xp, r) if r is not None else None
        else:
            x = xp.ascontiguousarray(x)
            r = xp.ascontiguousarray(r) if r is not None else None
        if b is not None:
            b = xp.ascontiguousarray(b)
        return graph(x, wl, b, r)
    run_cudnn.path = "cudnn-nhwc" if nhwc else "cudnn"
    return run_cudnn


@lowers("MaxPool", "AveragePool")
def _pool(ins, L):
    x = ins.inputs[0].shape
    if pool_windows.applies(ins):       # 1-D and 3-D pools
        return pool_windows.window_runner(ins, L.xp)
    if not L.backend.on_gpu or x.ndim != 4 or x.dtype not in ("float32", "float16", "float64"):
        return None
    if isinstance(ins.shape, TupleShape):
        return None  # MaxPool with indices: reference path
    a = ins.attrs
    kernel = [int(k) for k in a["kernel_shape"]]
    strides = [int(s) for s in (a.get("strides") or [1, 1])]
    dilations = [int(s) for s in (a.get("dilations") or [1, 1])]
    begin, end = _conv_pads(a, x.lens, kernel, strides, dilations)
    include = int(a.get("count_include_pad", 0))
    mode = "max" if ins.op == "MaxPool" else "avg"
    out = tuple(ins.shape.lens)
    return lambda v: poolk.pool2d(v, out, mode, kernel, strides, begin, end, dilations, include)


@lowers("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ins, L):
    xp = L.xp
    rank = ins.inputs[0].shape.ndim
    axes = tuple(range(2, rank))
    dtype = ins.shape.dtype
    if ins.op == "GlobalAveragePool" and L.backend.on_gpu and rank == 4 and dtype in ("float32", "float16"):
        return global_average_runner(xp, dtype)
    if ins.op == "GlobalAveragePool":
        acc = "float32" if dtype == "float16" else dtype
        return lambda v: xp.mean(v, axis=axes, keepdims=True, dtype=acc).astype(dtype, copy=False)
    return lambda v: xp.max(v, axis=axes, keepdims=True)


@lowers("BatchNormalization")
def _batchnorm(ins, L):
    """Inference batch norm: y = x * a + b with per-channel a, b folded on the host when the
    statistics are literals (the usual case), else computed on the device."""
    xp = L.xp
    if isinstance(ins.shape, TupleShape):
        return None
    eps = float(ins.attrs.get("epsilon", 1e-5))
    rank = ins.inputs[0].shape.ndim
    bshape = (1, -1) + (1,) * (rank - 2)
    dtype = ins.shape.dtype
    lits = [literal_of(ins, k) for k in range(1, 5)]
    if all(v is not None for v in lits):
        scale, bias, mean, var = [v.astype(np.float64) for v in lits]
        a = scale / np.sqrt(var + eps)
        b = bias - mean * a
        a_dev = xp.asarray(a.astype(dtype).reshape(bshape))
        b_dev = xp.asarray(b.astype(dtype).reshape(bshape))
        return lambda x, *rest: x * a_dev + b_dev

    def bn(x, scale, bias, mean, var):
        a = scale / xp.sqrt(var + eps)
        return (x * a.reshape(bshape) + (bias - mean * a).reshape(bshape)).astype(dtype, copy=False)
    return bn


def gemm_applies(spec) -> bool:
    """The exact-fp32 GEMM path takes fp32, 2-D, ungrouped convolutions."""
    return spec.dtype == "float32" and spec.group == 1 and len(spec.x_shape) == 4


def fp32_paths(spec, on_gpu: bool) -> list[str]:
    """The paths ``conv_choice.fp32_conv`` chooses among for ``spec`` (none: not an fp32
    convolution it takes): split-bf16 through cuDNN for 2-D and 3-D ones (grouped too), the split
    and exact GEMMs for ungrouped 2-D ones, the grouped kernel for grouped ones of few channels a
    group, exact cuDNN on a GPU."""
    from . import conv_split
    planar = gemm_applies(spec)
    split = conv_split.applies(spec, on_gpu)
    grouped = on_gpu and grouped_conv.applies(spec)
    names = [name for name, ok in (("split-cudnn", split), ("split-gemm", split and planar),
                                   ("grouped", grouped), ("gemm", planar),
                                   ("cudnn", on_gpu and cudnn_ok(spec))) if ok]
    return names if planar or split or grouped else []


def _gemm_conv(ins, L, spec, has_bias, residual, relu):
    """fp32 convolution as one exact fp32 GEMM over channels-last data (1x1 stride-1 convs read
    the activations in place; others gather their windows with one kernel first), then bias,
    residual and ReLU in one pass. cuBLAS keeps fp32 arithmetic (no TF32) at ~51 TFLOP/s."""
    from .kernels.gemm import make_matmul
    xp = L.xp
    on_gpu = L.backend.on_gpu
    mm, direct = make_matmul(xp, on_gpu)
    n, c, h, w = spec.x_shape
    kout, _cg, kh, kw = spec.w_shape
    _, _, oh, ow = spec.out_shape
    (pt, pl), (pb, pr) = spec.pads_begin, spec.pads_end
    (sh, sw), (dh, dw) = spec.strides, spec.dilations
    pointwise = kh == kw == 1 and sh == sw == 1 and pt == pl == pb == pr == 0
    weights: dict = {}

    def run(x, wt, *rest):
        key = id(wt)
        if key not in weights:   # (K, C, kh, kw) -> (kh * kw * C, K), once
            weights.clear()
            weights[key] = (wt, xp.ascontiguousarray(wt.transpose(2, 3, 1, 0).reshape(kh * kw * c, kout)))
        wm = weights[key][1]
        phys = to_nhwc(xp, x).transpose(0, 2, 3, 1)            # (N, H, W, C), packed
        if pointwise:
            cols = phys.reshape(n * h * w, c)
        elif on_gpu:
            cols = gemm_conv.im2col_nhwc(phys, spec)
        else:
            if pt or pb or pl or pr:
                phys = xp.pad(phys, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
            item = phys.itemsize
            s0, s1, s2, s3 = (st // item for st in phys.strides)
            view = xp.lib.stride_tricks.as_strided(
                phys, (n, oh, ow, kh, kw, c),
                tuple(v * item for v in (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3)))
            cols = xp.ascontiguousarray(view).reshape(n * oh * ow, kh * kw * c)
        if on_gpu:
            bias = rest[0].reshape(-1) if has_bias else None
            res = to_nhwc(xp, rest[-1]).transpose(0, 2, 3, 1).reshape(-1) if residual else None
            y = gemm_lt.fused_matmul(cols, wm, bias, res, relu)      # (N*OH*OW, K), epilogue fused
            if y is None:
                y = mm(cols, wm)
                gemm_conv.epilogue(y, bias, res, relu)
            return y.reshape(n, oh, ow, kout).transpose(0, 3, 1, 2)
        y = mm(cols, wm).reshape(n, oh, ow, kout)
        if has_bias:
            y += rest[0]
        if residual:
            y += to_nhwc(xp, rest[-1]).transpose(0, 2, 3, 1)
        if relu:
            xp.maximum(y, 0, out=y)
        return y.transpose(0, 3, 1, 2)
    run.capturable = direct
    run.path = "gemm-nhwc"
    return run
