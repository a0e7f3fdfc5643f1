"""Slice and Pad."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import fold_inputs, int_list, norm_axes, run_values, scalar_or_none
from .registry import Op, register_op

SLICE_INPUTS = ["starts", "ends", "axes", "steps"]


def slice_bounds(length: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX's clamping of a start/end pair (negative values count from the end)."""
    if start < 0:
        start += length
    if end < 0:
        end += length
    if step > 0:
        return max(0, min(start, length)), max(0, min(end, length))
    return max(-1, min(start, length - 1)), max(-1, min(end, length - 1))


def slice_len(length, start, end, step):
    if length is None:
        return None
    s, e = slice_bounds(length, start, end, step)
    return max(0, -(-(e - s) // step))


def axes_steps(v, rank):
    """The axes a Slice with values ``v`` (starts, ends, axes, steps) takes, normalised, and
    their steps (1 where none are given)."""
    axes = list(range(len(v["starts"]))) if v["axes"] is None else norm_axes(v["axes"], rank)
    steps = v["steps"] or [1] * len(axes)
    return axes, steps


@register_op
class Slice(Op):
    name = "Slice"

    def from_onnx(self, node):
        if node.opset < 10 or "starts" in node.attrs:
            attrs = {"starts": node.attrs["starts"], "ends": node.attrs["ends"],
                     "axes": node.attrs.get("axes"), "steps": None}
            inputs = [node.input(0)]
        else:
            attrs, inputs = fold_inputs(node, 1, SLICE_INPUTS)
        rank = node.input(0).shape.ndim
        if attrs["axes"] is not None:
            attrs["axes"] = norm_axes(attrs["axes"], rank)
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs.get("dynamic"):
            if "axes" in attrs["dynamic"] or "starts" in attrs["dynamic"] or "ends" in attrs["dynamic"]:
                return Shape(x.dtype, [None] * x.ndim)
        lens = list(x.lens)
        axes, steps = axes_steps(attrs, x.ndim)
        for a, s, e, st in zip(axes, attrs["starts"], attrs["ends"], steps):
            lens[a] = None if attrs.get("dynamic") else slice_len(lens[a], s, e, st)
        return Shape(x.dtype, lens)

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, SLICE_INPUTS)
        axes, steps = axes_steps(v, x.ndim)
        index = [slice(None)] * x.ndim
        for a, s, e, st in zip(axes, v["starts"], v["ends"], steps):
            s, e = slice_bounds(x.shape[a], s, e, st)
            index[a] = slice(s, None if e < 0 else e, st)
        return x[tuple(index)]


PAD_INPUTS = ["pads", "value", "axes"]
PAD_CONVERT = {"pads": int_list, "value": scalar_or_none, "axes": int_list}


def full_pads(pads, axes, rank):
    """Pads of every axis ([begin..., end...]) from pads of ``axes`` only."""
    if axes is None:
        return list(pads)
    axes = norm_axes(axes, rank)
    full = [0] * (2 * rank)
    for k, a in enumerate(axes):
        full[a], full[a + rank] = pads[k], pads[k + len(axes)]
    return full


@register_op
class Pad(Op):
    name = "Pad"

    def from_onnx(self, node):
        x = node.input(0)
        mode = node.attrs.get("mode", "constant")
        if "pads" in node.attrs:  # before opset 11
            return {"mode": mode, "pads": list(node.attrs["pads"]),
                    "value": float(node.attrs.get("value", 0.0))}, [x]
        attrs, inputs = fold_inputs(node, 1, PAD_INPUTS, convert=PAD_CONVERT)
        if attrs["pads"] is not None and attrs["axes"] is not None:
            attrs["pads"], attrs["axes"] = full_pads(attrs["pads"], attrs["axes"], x.shape.ndim), None
        attrs["mode"] = mode
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs.get("pads") is None or attrs.get("axes") is not None:
            return Shape(x.dtype, [None] * x.ndim)
        pads, r = attrs["pads"], x.ndim
        return Shape(x.dtype, [None if n is None else n + pads[k] + pads[k + r] for k, n in enumerate(x.lens)])

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, PAD_INPUTS, convert=PAD_CONVERT)
        r = x.ndim
        pads = full_pads(v["pads"], v["axes"], r)
        value = v["value"] if v["value"] is not None else 0
        widths = [(max(pads[k], 0), max(pads[k + r], 0)) for k in range(r)]
        mode = attrs["mode"]
        kwargs = {"constant_values": np.asarray(value).astype(x.dtype)} if mode == "constant" else {}
        y = np.pad(x, widths, mode=mode, **kwargs)
        # Negative pads crop.
        crop = tuple(slice(-min(pads[k], 0), y.shape[k] + min(pads[k + r], 0)) for k in range(r))
        return y[crop]


@register_op
class CenterCropPad(Op):
    """Crop or zero-pad ``axes`` to the given lengths around the centre (the odd element goes
    to the end)."""

    name = "CenterCropPad"

    def from_onnx(self, node):
        rank = node.input(0).shape.ndim
        axes = node.attrs.get("axes")
        attrs, inputs = fold_inputs(node, 1, ["shape"])
        attrs["axes"] = list(range(rank)) if axes is None else norm_axes(axes, rank)
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        lens = list(x.lens)
        for a, n in zip(attrs["axes"], attrs.get("shape") or [None] * len(attrs["axes"])):
            lens[a] = n
        return Shape(x.dtype, lens)

    def compute(self, attrs, x, *args):
        target = run_values(attrs, (x, *args), 1, ["shape"])["shape"]
        src = [slice(None)] * x.ndim
        dst = [slice(None)] * x.ndim
        out = list(x.shape)
        for a, n in zip(attrs["axes"], target):
            have = x.shape[a]
            out[a] = n
            lo = abs(have - n) // 2
            if n < have:
                src[a] = slice(lo, lo + n)
            else:
                dst[a] = slice(lo, lo + have)
        y = np.zeros(out, dtype=x.dtype)
        y[tuple(dst)] = x[tuple(src)]
        return y
