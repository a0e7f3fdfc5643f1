"""Resize (nearest, linear, cubic; every coordinate transformation, antialias, axes,
keep_aspect_ratio_policy) and the deprecated Upsample. Interpolation is separable: one axis at a
time, linear/cubic as a dense (out × in) weight matrix, which keeps the definition plain."""
from __future__ import annotations

import math

import numpy as np

from compiler.ir.shape import Shape

from .common import fold_inputs, float_list, int_list, norm_axes, result, run_values, widen
from .registry import Op, register_op

RESIZE_INPUTS = ["roi", "scales", "sizes"]


def _floats_or_none(value):
    return float_list(value) if np.asarray(value).size else None


def _ints_or_none(value):
    return int_list(value) if np.asarray(value).size else None


CONVERT = {"roi": _floats_or_none, "scales": _floats_or_none, "sizes": _ints_or_none}


def output_plan(attrs, in_lens, roi, scales, sizes):
    """Output lengths, per-axis scales and per-axis (start, end) of the region of interest."""
    rank = len(in_lens)
    axes = attrs["axes"] if attrs.get("axes") is not None else list(range(rank))
    out, scale = list(in_lens), [1.0] * rank
    if sizes is not None:
        policy = attrs["keep_aspect_ratio_policy"]
        ratios = [sizes[k] / in_lens[a] for k, a in enumerate(axes)]
        if policy != "stretch":
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                scale[a], out[a] = s, int(math.floor(s * in_lens[a] + 0.5))
        else:
            for k, a in enumerate(axes):
                scale[a], out[a] = ratios[k], sizes[k]
    else:
        for k, a in enumerate(axes):
            scale[a], out[a] = scales[k], int(math.floor(in_lens[a] * scales[k]))
    box = [(0.0, 1.0)] * rank
    if roi is not None:
        n = len(axes)
        for k, a in enumerate(axes):
            box[a] = (roi[k], roi[k + n])
    return out, scale, box, axes


def source_coords(mode, out_len, in_len, scale, box):
    """Where each output index samples the input (coordinate_transformation_mode)."""
    x = np.arange(out_len, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjust = out_len / (scale * in_len)
        return in_len / 2 * (1 - adjust) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    if mode == "align_corners":
        # The resized length here is scale × in_len (not rounded), as onnx's reference has it.
        resized = scale * in_len
        return x * (in_len - 1) / (resized - 1) if out_len > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        start, end = box
        if out_len > 1:
            return start * (in_len - 1) + x * (end - start) * (in_len - 1) / (out_len - 1)
        return np.full_like(x, 0.5 * (start + end) * (in_len - 1))
    raise ValueError(f"coordinate_transformation_mode {mode!r}")


def nearest_index(x, rule):
    if rule == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if rule == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if rule == "floor":
        return np.floor(x)
    if rule == "ceil":
        return np.ceil(x)
    raise ValueError(f"nearest_mode {rule!r}")


def cubic(t, a):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def weight_matrix(coords, in_len, attrs, scale):
    """Linear/cubic interpolation weights (out × in); taps outside the input repeat the edge,
    or are dropped with exclude_outside; antialias widens the kernel when shrinking."""
    radius = 1 if attrs["mode"] == "linear" else 2
    k_scale = min(scale, 1.0) if attrs["antialias"] else 1.0
    reach = int(math.ceil(radius / k_scale)) + 1
    weights = np.zeros((len(coords), in_len))
    for j, x in enumerate(coords):
        base = math.floor(x)
        taps = np.arange(base - reach + 1, base + reach + 1)
        t = (taps - x) * k_scale
        w = np.maximum(0.0, 1 - np.abs(t)) if radius == 1 else cubic(t, attrs["cubic_coeff_a"])
        inside = (taps >= 0) & (taps < in_len)
        if attrs["exclude_outside"]:
            w = np.where(inside, w, 0.0)
        np.add.at(weights[j], np.clip(taps, 0, in_len - 1), w)
        total = weights[j].sum()
        if total:
            weights[j] /= total
    return weights


def resize(x, attrs, roi, scales, sizes):
    out, scale, box, axes = output_plan(attrs, x.shape, roi, scales, sizes)
    y = widen(x).astype(np.float64) if attrs["mode"] != "nearest" else x
    outside = np.zeros(out, dtype=bool) if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize" else None
    for a in axes:
        coords = source_coords(attrs["coordinate_transformation_mode"], out[a], x.shape[a], scale[a], box[a])
        if outside is not None:
            bad = (coords < 0) | (coords > x.shape[a] - 1)
            outside |= bad.reshape([-1 if k == a else 1 for k in range(x.ndim)])
        if attrs["mode"] == "nearest":
            index = np.clip(nearest_index(coords, attrs["nearest_mode"]), 0, x.shape[a] - 1).astype(np.int64)
            y = np.take(y, index, axis=a)
        else:
            w = weight_matrix(coords, x.shape[a], attrs, scale[a])
            y = np.moveaxis(np.tensordot(w, np.moveaxis(y, a, 0), axes=1), 0, a)
    if outside is not None:
        y = np.where(outside, attrs["extrapolation_value"], y)
    return result(y, x.dtype)


@register_op
class Resize(Op):
    name = "Resize"

    def from_onnx(self, node):
        a = node.attrs
        if node.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
            attrs, inputs = fold_inputs(node, 1, ["scales"], convert=CONVERT)
            attrs.update(roi=None, sizes=None)
            a = dict(a, coordinate_transformation_mode="asymmetric")
        else:
            attrs, inputs = fold_inputs(node, 1, RESIZE_INPUTS, convert=CONVERT)
        mode = a.get("mode", "nearest")
        if mode not in ("nearest", "linear", "cubic"):
            node.unsupported(f"mode {mode!r}")
        rank = node.input(0).shape.ndim
        axes = a.get("axes")
        attrs.update({
            "mode": mode,
            "coordinate_transformation_mode": a.get("coordinate_transformation_mode", "half_pixel"),
            "nearest_mode": a.get("nearest_mode", "round_prefer_floor"),
            "cubic_coeff_a": float(a.get("cubic_coeff_a", -0.75)),
            "exclude_outside": int(a.get("exclude_outside", 0)),
            "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
            "antialias": int(a.get("antialias", 0)),
            "axes": None if axes is None else norm_axes(axes, rank),
            "keep_aspect_ratio_policy": a.get("keep_aspect_ratio_policy", "stretch"),
        })
        return attrs, inputs

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if (attrs.get("scales") is None and attrs.get("sizes") is None) or not x.static:
            axes = attrs["axes"] if attrs["axes"] is not None else range(x.ndim)
            return Shape(x.dtype, [None if k in axes else n for k, n in enumerate(x.lens)])
        out = output_plan(attrs, x.lens, attrs.get("roi"), attrs.get("scales"), attrs.get("sizes"))[0]
        return Shape(x.dtype, out)

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, RESIZE_INPUTS, convert=CONVERT)
        return resize(x, attrs, v["roi"], v["scales"], v["sizes"])


@register_op
class Upsample(Resize):
    """Upsample-9 (deprecated): Resize with asymmetric coordinates and floor rounding."""

    name = "Upsample"

    def from_onnx(self, node):
        if "scales" in node.attrs:  # Upsample-7
            attrs, inputs = {"scales": [float(s) for s in node.attrs["scales"]]}, [node.input(0)]
        else:
            attrs, inputs = fold_inputs(node, 1, ["scales"], convert=CONVERT)
        attrs.update({"roi": None, "sizes": None, "mode": node.attrs.get("mode", "nearest"),
                      "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor",
                      "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0,
                      "antialias": 0, "axes": None, "keep_aspect_ratio_policy": "stretch"})
        return attrs, inputs

    def compute(self, attrs, x, *args):
        v = run_values(attrs, (x, *args), 1, ["scales"], convert=CONVERT)
        return resize(x, attrs, None, v["scales"], None)
