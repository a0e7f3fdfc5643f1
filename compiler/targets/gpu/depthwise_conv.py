"""Depthwise convolutions (one filter per channel) on the gpu target: ``kernels.depthwise``'s
kernel instead of cuDNN, which ran them several times slower (``kernels/depthwise.py`` says by how
much). Channels-last only, the layout the target keeps convolutions in."""
from __future__ import annotations

from .kernels import depthwise


def applies(spec) -> bool:
    """Whether convolution ``spec`` is a 2-D channels-last depthwise one the kernel takes."""
    _n, c, *spatial = spec.x_shape
    k, per_group = spec.w_shape[:2]
    return (len(spatial) == 2 and spec.nhwc and not spec.inputs and spec.group == c == k and per_group == 1
            and spec.dtype in ("float32", "float16") and tuple(spec.dilations) == (1, 1))


def activation_of(spec, attrs) -> str:
    """The kernel's activation source for a Conv or fused_conv with ``attrs``."""
    return depthwise.activation_source(spec.relu, attrs.get("clip"), bool(attrs.get("swish")),
                                       bool(attrs.get("hardswish")))


def prologue_of(attrs) -> str:
    """The kernel's source for the activation of the input (``fused_conv``'s ``prologue``)."""
    steps = attrs.get("prologue") or {}
    return depthwise.activation_source(bool(steps.get("relu")), steps.get("clip"), bool(steps.get("swish")),
                                       bool(steps.get("hardswish")))


def channels_last_runner(xp, spec, to_nhwc, launch, path: str):
    """The runner of a convolution one of our channels-last kernels computes: (x, w[, b][, r]) ->
    y, logical NCHW stored channels-last. ``launch(x, w_taps, b, r, y)`` runs the kernel on packed
    (N, H, W, C) arrays, the weights laid out fp32 (KH, KW, C / group, K)."""
    n, k, oh, ow = spec.out_shape
    weights: dict = {}

    def run(x, w, *rest):
        key = id(w)
        if key not in weights:   # weights are literals: re-laid out once
            weights.clear()
            weights[key] = (w, xp.ascontiguousarray(w.transpose(2, 3, 1, 0).astype("float32")))
        bias = xp.ascontiguousarray(rest[0]) if spec.bias else None
        residual = to_nhwc(xp, rest[-1]).transpose(0, 2, 3, 1) if spec.residual else None
        y = xp.empty((n, oh, ow, k), dtype=spec.dtype)
        launch(to_nhwc(xp, x).transpose(0, 2, 3, 1), weights[key][1], bias, residual, y)
        return y.transpose(0, 3, 1, 2)
    run.path = path
    return run


def depthwise_runner(xp, spec, attrs, to_nhwc):
    """The runner of depthwise ``spec`` (``channels_last_runner``)."""
    activation, prologue = activation_of(spec, attrs), prologue_of(attrs)

    def launch(x, w_taps, b, r, y):
        kh, kw, _one, c = w_taps.shape
        depthwise.depthwise_nhwc(x, w_taps.reshape(kh, kw, c), b, r, y, spec, activation, prologue)
    return channels_last_runner(xp, spec, to_nhwc, launch, "depthwise-nhwc")
