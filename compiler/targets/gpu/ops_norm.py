"""Lowerings of softmax and the normalisations (CuPy expressions accumulating fp16 data in fp32;
last-axis LayerNormalization as one kernel, ``layernorm_rows``)."""
from __future__ import annotations

from compiler.ir.shape import TupleShape

from . import layernorm_rows, norm_groups, softmax_rows
from .lowering import lowers
from .ops_reduce import ACC


def _centred(xp, xf, axes):
    """(xf less its mean over ``axes``, the variance over them), both keeping the reduced axes."""
    d = xf - xp.mean(xf, axis=axes, keepdims=True)
    return d, xp.mean(d * d, axis=axes, keepdims=True)


@lowers("Softmax", "LogSoftmax")
def _softmax(ins, L):
    xp = L.xp
    rank = ins.shape.ndim
    axis = int(ins.attrs.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    dtype = ins.shape.dtype
    log = ins.op == "LogSoftmax"
    if L.backend.on_gpu and softmax_rows.applies(ins):
        return softmax_rows.softmax_runner(xp, ins)

    def softmax(x):
        xf = x.astype(ACC.get(dtype, dtype), copy=False)
        m = xp.max(xf, axis=axis, keepdims=True)
        e = xp.exp(xf - m)
        s = xp.sum(e, axis=axis, keepdims=True)
        out = (xf - m) - xp.log(s) if log else e / s
        return out.astype(dtype, copy=False)
    return softmax


@lowers("LayerNormalization")
def _layernorm(ins, L):
    xp = L.xp
    rank = ins.inputs[0].shape.ndim
    axis = int(ins.attrs.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    eps = float(ins.attrs.get("epsilon", 1e-5))
    axes = tuple(range(axis, rank))
    dtype = ins.inputs[0].shape.dtype
    acc = ACC.get(dtype, dtype)
    if isinstance(ins.shape, TupleShape):
        return None  # mean / inv-std outputs asked for: reference path
    if L.backend.on_gpu and layernorm_rows.applies(ins):
        return layernorm_rows.layernorm_runner(xp, ins)

    def layernorm(x, scale=None, bias=None):
        xf = x.astype(acc, copy=False)
        d, var = _centred(xp, xf, axes)
        y = d * (1.0 / xp.sqrt(var + eps))
        if scale is not None:
            y = y * scale
        if bias is not None:
            y = y + bias
        return y.astype(dtype, copy=False)
    return layernorm


@lowers("InstanceNormalization")
def _instancenorm(ins, L):
    xp = L.xp
    rank = ins.inputs[0].shape.ndim
    eps = float(ins.attrs.get("epsilon", 1e-5))
    axes = tuple(range(2, rank))
    dtype = ins.shape.dtype
    acc = ACC.get(dtype, dtype)
    bshape = (1, -1) + (1,) * (rank - 2)
    if L.backend.on_gpu and norm_groups.applies(ins):
        return norm_groups.norm_groups_runner(xp, ins)

    def instnorm(x, scale, bias):
        xf = x.astype(acc, copy=False)
        d, var = _centred(xp, xf, axes)
        y = d / xp.sqrt(var + eps) * scale.reshape(bshape) + bias.reshape(bshape)
        return y.astype(dtype, copy=False)
    return instnorm


@lowers("GroupNormalization")
def _groupnorm(ins, L):
    xp = L.xp
    x = ins.inputs[0].shape
    rank = x.ndim
    groups = int(ins.attrs["num_groups"])
    eps = float(ins.attrs.get("epsilon", 1e-5))
    dtype = ins.shape.dtype
    acc = ACC.get(dtype, dtype)
    n, c = x.lens[0], x.lens[1]
    per_group_scale = ins.inputs[1].shape.lens[0] == groups and groups != c
    bshape = (1, -1) + (1,) * (rank - 2)
    if L.backend.on_gpu and norm_groups.applies(ins):
        return norm_groups.norm_groups_runner(xp, ins)

    def groupnorm(v, scale, bias):
        xf = v.astype(acc, copy=False).reshape(n, groups, -1)
        d, var = _centred(xp, xf, 2)
        y = (d / xp.sqrt(var + eps)).reshape(v.shape)
        if per_group_scale:
            scale = xp.repeat(scale, c // groups)
            bias = xp.repeat(bias, c // groups)
        y = y * scale.reshape(bshape) + bias.reshape(bshape)
        return y.astype(dtype, copy=False)
    return groupnorm
