"""Normalisations: BatchNormalization, InstanceNormalization, LayerNormalization,
GroupNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape

from .common import axis_attr, norm_axes, result, tuple_shape, widen
from .registry import Op, register_op


def _per_channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


@register_op
class BatchNormalization(Op):
    """Inference form; ``training_mode`` also gives the batch-updated running mean and var."""

    name = "BatchNormalization"

    def from_onnx(self, node):
        training = int(node.attrs.get("training_mode", 0))
        return {"epsilon": float(node.attrs.get("epsilon", 1e-5)),
                "momentum": float(node.attrs.get("momentum", 0.9)),
                "training_mode": training,
                "outputs": max(node.num_outputs, 1) if training else 1}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        if attrs["outputs"] == 1:
            return inputs[0]
        return tuple_shape(inputs[0], *[inputs[3], inputs[4]][:attrs["outputs"] - 1])

    def compute(self, attrs, x, scale, bias, mean, var):
        dtype, nd, eps = x.dtype, x.ndim, attrs["epsilon"]
        xw = widen(x)
        if attrs["training_mode"]:
            axes = (0,) + tuple(range(2, nd))
            bmean, bvar = xw.mean(axis=axes), xw.var(axis=axes)
            y = (xw - _per_channel(bmean, nd)) / np.sqrt(_per_channel(bvar, nd) + eps)
            y = result(y * _per_channel(widen(scale), nd) + _per_channel(widen(bias), nd), dtype)
            m = attrs["momentum"]
            running = [result(widen(mean) * m + bmean * (1 - m), mean.dtype),
                       result(widen(var) * m + bvar * (1 - m), var.dtype)]
            return (y, *running[:attrs["outputs"] - 1]) if attrs["outputs"] > 1 else y
        y = (xw - _per_channel(widen(mean), nd)) / np.sqrt(_per_channel(widen(var), nd) + eps)
        return result(y * _per_channel(widen(scale), nd) + _per_channel(widen(bias), nd), dtype)


@register_op
class InstanceNormalization(Op):
    name = "InstanceNormalization"

    def from_onnx(self, node):
        return {"epsilon": float(node.attrs.get("epsilon", 1e-5))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, scale, bias):
        xw, nd = widen(x), x.ndim
        axes = tuple(range(2, nd))
        mean, var = xw.mean(axis=axes, keepdims=True), xw.var(axis=axes, keepdims=True)
        y = (xw - mean) / np.sqrt(var + attrs["epsilon"])
        return result(y * _per_channel(widen(scale), nd) + _per_channel(widen(bias), nd), x.dtype)


def _stat_dtype(attrs, dtype):
    """LayerNormalization's Mean and InvStdDev type: float32 for stash type 1, else the input's."""
    return "float32" if attrs["stash_type"] == 1 else dtype


def _stash(x, stash_type):
    return x.astype(np.float32) if stash_type == 1 and x.dtype.name != "float64" else widen(x)


@register_op
class LayerNormalization(Op):
    """Normalise over axes ``axis``..; optional Mean and InvStdDev results (stash type)."""

    name = "LayerNormalization"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, -1),
                "epsilon": float(node.attrs.get("epsilon", 1e-5)),
                "stash_type": int(node.attrs.get("stash_type", 1)),
                "outputs": max(node.num_outputs, 1)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        x = inputs[0]
        if attrs["outputs"] == 1:
            return x
        stat = Shape(_stat_dtype(attrs, x.dtype), x.lens[:attrs["axis"]] + (1,) * (x.ndim - attrs["axis"]))
        return tuple_shape(x, *[stat] * (attrs["outputs"] - 1))

    def compute(self, attrs, x, scale, bias=None):
        axes = tuple(range(attrs["axis"], x.ndim))
        xs = _stash(x, attrs["stash_type"])
        mean = xs.mean(axis=axes, keepdims=True)
        inv = 1 / np.sqrt(((xs - mean) ** 2).mean(axis=axes, keepdims=True) + attrs["epsilon"])
        y = (xs - mean) * inv * widen(scale)
        if bias is not None:
            y = y + widen(bias)
        y = result(y, x.dtype)
        if attrs["outputs"] == 1:
            return y
        stat_dtype = _stat_dtype(attrs, x.dtype)
        return (y, result(mean, stat_dtype), result(inv, stat_dtype))[:attrs["outputs"]]


@register_op
class GroupNormalization(Op):
    name = "GroupNormalization"

    def from_onnx(self, node):
        return {"num_groups": int(node.attrs["num_groups"]),
                "epsilon": float(node.attrs.get("epsilon", 1e-5)),
                "stash_type": int(node.attrs.get("stash_type", 1))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, scale, bias):
        n, c = x.shape[:2]
        g = attrs["num_groups"]
        xs = _stash(x, attrs["stash_type"]).reshape(n, g, -1)
        mean = xs.mean(axis=-1, keepdims=True)
        var = xs.var(axis=-1, keepdims=True)
        y = ((xs - mean) / np.sqrt(var + attrs["epsilon"])).reshape(x.shape)
        scale, bias = widen(scale), widen(bias)
        if scale.size != c:  # opset 18: one scale per group
            scale, bias = np.repeat(scale, c // g), np.repeat(bias, c // g)
        return result(y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim), x.dtype)


@register_op
class RMSNormalization(Op):
    name = "RMSNormalization"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, -1),
                "epsilon": float(node.attrs.get("epsilon", 1e-5)),
                "stash_type": int(node.attrs.get("stash_type", 1))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x, scale):
        axes = tuple(range(attrs["axis"], x.ndim))
        xs = _stash(x, attrs["stash_type"])
        rms = np.sqrt((xs * xs).mean(axis=axes, keepdims=True) + attrs["epsilon"])
        return result(xs / rms * widen(scale), x.dtype)


@register_op
class LpNormalization(Op):
    name = "LpNormalization"

    def from_onnx(self, node):
        return {"axis": axis_attr(node, -1),
                "p": int(node.attrs.get("p", 2))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        xw = widen(x)
        norm = (np.abs(xw) ** attrs["p"]).sum(axis=attrs["axis"], keepdims=True) ** (1 / attrs["p"])
        with np.errstate(invalid="ignore", divide="ignore"):
            return result(np.where(norm == 0, 0, xw / norm), x.dtype)


@register_op
class MeanVarianceNormalization(Op):
    name = "MeanVarianceNormalization"

    def from_onnx(self, node):
        rank = node.input(0).shape.ndim
        return {"axes": norm_axes(node.attrs.get("axes", [0, 2, 3]), rank)}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        xw, axes = widen(x), tuple(attrs["axes"])
        mean = xw.mean(axis=axes, keepdims=True)
        std = np.sqrt((xw * xw).mean(axis=axes, keepdims=True) - mean * mean)
        return result((xw - mean) / (std + 1e-9), x.dtype)


@register_op
class LRN(Op):
    """Local response normalisation across channels."""

    name = "LRN"

    def from_onnx(self, node):
        a = node.attrs
        return {"size": int(a["size"]), "alpha": float(a.get("alpha", 1e-4)), "beta": float(a.get("beta", 0.75)),
                "bias": float(a.get("bias", 1.0))}, node.present_inputs()

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        xw = widen(x)
        size, c = attrs["size"], x.shape[1]
        lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
        sq = xw * xw
        total = np.zeros_like(xw)
        for k in range(c):
            total[:, k] = sq[:, max(0, k - lo):min(c, k + hi + 1)].sum(axis=1)
        return result(xw / (attrs["bias"] + attrs["alpha"] / size * total) ** attrs["beta"], x.dtype)
