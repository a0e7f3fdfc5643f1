"""One attention straight from Q, K, V graph inputs (batch, heads, seq, head), in the forms
exporters write its scale (PyTorch's sqrt on both sides, a Div or a Mul of the scores), with a
padding mask input, a causal literal mask or none; keys may outnumber queries."""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

from tests.compiler.targets.gpu.cases import init, model, vi

TYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}


def _scores(form: str, d: int, dtype: str):
    """Nodes from q, k (batch, heads, seq, head) to 'scores', and their literals."""
    s = 1 / math.sqrt(d)
    if form == "sdpa":      # PyTorch's exporter: both sides by sqrt(scale), K^T by a Transpose
        nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                 helper.make_node("Mul", ["q", "r"], ["qs"]), helper.make_node("Mul", ["kt", "r"], ["ks"]),
                 helper.make_node("MatMul", ["qs", "ks"], ["scores"])]
        return nodes, [init("r", np.asarray(math.sqrt(s), dtype))]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["qk"])]
    if form == "div":
        return nodes + [helper.make_node("Div", ["qk", "c"], ["scores"])], [init("c", np.asarray(math.sqrt(d), dtype))]
    return nodes + [helper.make_node("Mul", ["c", "qk"], ["scores"])], [init("c", np.asarray(s, dtype))]


def causal_mask(seq: int, dtype: str):
    return np.triu(np.full((seq, seq), -np.inf if dtype == "float32" else -1e4, dtype), 1)


def qkv_model(shape, dtype="float32", form="sdpa", mask=None, kv_seq=None):
    """mask: None, "input" (a (batch, 1, 1, kv) graph input) or "causal" (a literal)."""
    b, h, s, d = shape
    kv = kv_seq or s
    t = TYPES[dtype]
    nodes, inits = _scores(form, d, dtype)
    soft_in = "scores"
    inputs = [vi("q", (b, h, s, d), t), vi("k", (b, h, kv, d), t), vi("v", (b, h, kv, d), t)]
    if mask is not None:
        nodes.append(helper.make_node("Add", ["scores", "m"], ["masked"]))
        soft_in = "masked"
        if mask == "input":
            inputs.append(vi("m", (b, 1, 1, kv), t))
        else:
            inits.append(init("m", causal_mask(s, dtype)))
    nodes += [helper.make_node("Softmax", [soft_in], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    return model(nodes, inputs, [vi("y", None, t)], inits)


def feeds(onnx_model, dtype, seed=0):
    """Fresh random inputs; a mask input 'm' masks about a quarter of the keys (never a whole row)."""
    rng = np.random.default_rng(seed)
    out = {}
    for value in onnx_model.graph.input:
        shape = [dim.dim_value for dim in value.type.tensor_type.shape.dim]
        if value.name == "m":
            keep = rng.random(shape) > 0.25
            keep[..., 0] = True
            out["m"] = np.where(keep, 0, -1e4).astype(dtype)
        else:
            out[value.name] = rng.standard_normal(shape).astype(dtype)
    return out
