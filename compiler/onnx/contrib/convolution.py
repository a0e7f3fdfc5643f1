"""ONNX Runtime's NhwcConv (its optimizer's channels-last convolution for Stable Diffusion): a
Conv whose input, weights and output hold the channels last, weights as (out, kernel...,
in / group). Spelled out as the Conv between transposes; the weights' transpose folds on import.
Whether the optimizer's own transposes around it cancel these is not yet checked."""
from __future__ import annotations

from .builder import Builder, Unexpandable


def nhwc_conv(node, b: Builder) -> None:
    rank = b.rank(b.input(0))
    if rank is None or rank < 3:
        raise Unexpandable("input not declared with its number of axes")
    first = [0, rank - 1, *range(1, rank - 1)]  # channels last -> channels first
    inputs = [b.op("Transpose", [b.input(k)], perm=first) for k in (0, 1)]
    if b.input(2):
        inputs.append(b.input(2))
    conv = b.op("Conv", inputs, **b.attrs)
    b.op("Transpose", [conv], b.output(0), perm=[0, *range(2, rank), 1])


EXPANSIONS = {"NhwcConv": nhwc_conv}
