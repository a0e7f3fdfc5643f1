"""ONNX Runtime's GroupNorm family, as its optimizer writes Stable Diffusion's UNet and VAE:
channels last by default, a SiLU after the norm when ``activation`` is 1, and SkipGroupNorm with
the residual add and a per-channel bias folded in. Spelled out as the standard
GroupNormalization (opset 21: one scale and bias per channel) between transposes to channels
first and back (on the emulated gpu target both transposes stay; not yet looked at on a GPU);
BiasSplitGelu, the half-gated GELU of the same models' feed-forward blocks, is here too.

ONNX Runtime runs these on CUDA only, so they are checked against their definitions."""
from __future__ import annotations

from .builder import Builder, Unexpandable

ACTIVATIONS = (0, 1)  # none, SiLU


def group_norm(node, b: Builder) -> None:
    """GroupNorm(X, gamma, beta) -> Y."""
    _normalize(b, b.input(0))


def skip_group_norm(node, b: Builder) -> None:
    """SkipGroupNorm(X, gamma, beta, skip, bias?) -> Y, S?: GroupNorm of S = X + skip + bias,
    where skip is (N, H, W, C) or (N, 1, 1, C) / (N, C) broadcast over the image and bias (C)."""
    skip = b.input(3)
    if b.rank(skip) == 2:  # (N, C): one value per image and channel
        skip = b.op("Unsqueeze", [skip, b.ints([1, 2])])
    total = b.op("Add", [b.plus(b.input(0), b.input(4)), skip], b.output(1))
    _normalize(b, total)


def bias_split_gelu(node, b: Builder) -> None:
    """BiasSplitGelu(X, bias) -> Y: X + bias split in two halves along the last axis, the first
    times Gelu of the second."""
    left, right = b.fresh(), b.fresh()
    b.op("Split", [b.op("Add", [b.input(0), b.input(1)])], [left, right], axis=-1, num_outputs=2)
    b.op("Mul", [left, b.op("Gelu", [right], approximate="none")], b.output(0))


def _normalize(b: Builder, x: str) -> None:
    """GroupNormalization of ``x`` (channels last unless ``channels_last`` is 0), then the SiLU
    when asked for, into the node's first output."""
    activation = int(b.attr("activation", 0))
    if activation not in ACTIVATIONS:
        raise Unexpandable(f"activation {activation}")
    channels_last = int(b.attr("channels_last", 1))
    rank = b.rank(b.input(0))
    if channels_last and rank is None:
        raise Unexpandable("input not declared with its number of axes")
    if channels_last:
        x = b.op("Transpose", [x], perm=[0, rank - 1, *range(1, rank - 1)])
    y = b.op("GroupNormalization", [x, b.input(1), b.input(2)], num_groups=int(b.attr("groups")),
             epsilon=float(b.attr("epsilon", 1e-5)))
    if activation == 1:
        y = b.op("Mul", [y, b.op("Sigmoid", [y])])
    if channels_last:
        y = b.op("Transpose", [y], perm=[0, *range(2, rank), 1])
    b.rename(y, b.output(0))


EXPANSIONS = {"GroupNorm": group_norm, "SkipGroupNorm": skip_group_norm, "BiasSplitGelu": bias_split_gelu}
