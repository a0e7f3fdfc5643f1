"""Attention blocks in the forms exporters write, for the fused-attention tests."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from tests.compiler.targets.gpu.cases import init, model, vi


def _node(op, ins, out, **attrs):
    return helper.make_node(op, ins, [out], **attrs)


def _heads(name, src, batch, seq, heads, size, three_d):
    """``src`` (batch, seq, heads·size) split into heads: (batch, heads, seq, size), or
    (batch·heads, seq, size) as PyTorch's MultiheadAttention reshapes it."""
    nodes = [_node("Reshape", [src, f"{name}_s4"], f"{name}_4"),
             _node("Transpose", [f"{name}_4"], f"{name}_h", perm=[0, 2, 1, 3])]
    inits = [init(f"{name}_s4", np.array([batch, seq, heads, size], np.int64))]
    if three_d:
        nodes.append(_node("Reshape", [f"{name}_h", f"{name}_s3"], f"{name}_3"))
        inits.append(init(f"{name}_s3", np.array([batch * heads, seq, size], np.int64)))
        return nodes, inits, f"{name}_3"
    return nodes, inits, f"{name}_h"


def block(batch=2, seq=13, heads=2, size=16, three_d=False, mask=False, scale_on="scores",
          fp16=False, softmax_axis=-1, softmax_also_output=False, causal=None, kv_heads=None,
          causal_add=None):
    """x (batch, seq, hidden) -> attention over ``heads`` heads -> (batch, seq, hidden).

    ``scale_on``: "scores" divides Q·Kᵀ by √size; "both" multiplies Q and Kᵀ by size^-¼ each
    (PyTorch's exporter). ``mask`` adds BERT's (1 - m) · -10000 padding mask, m an input.
    ``causal``: the fill a GPT-2-style Where(tril, scores, fill) puts above the diagonal (a
    ``causal_condition`` may replace the literal lower triangle). ``kv_heads``: K and V have
    fewer heads, each repeated for ``heads / kv_heads`` query heads as Llama's repeat_kv does
    (Unsqueeze, Expand, Reshape; 4-D only). ``causal_add``: an additive literal mask with this
    value above the diagonal (Llama's Trilu-built mask); a list gives the whole (seq, seq) mask."""
    hidden = heads * size
    rng = np.random.default_rng(7)
    dt = np.float16 if fp16 else np.float32
    t = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT
    nodes, inits = [], []
    heads_of = {}
    for name in ("q", "k", "v"):
        own = heads if name == "q" or kv_heads is None else kv_heads
        nodes.append(_node("MatMul", ["x", f"w{name}"], f"{name}_p"))
        inits.append(init(f"w{name}", (rng.standard_normal((hidden, own * size)) / np.sqrt(hidden)).astype(dt)))
        more, more_inits, out = _heads(name, f"{name}_p", batch, seq, own, size, three_d)
        nodes += more
        inits += more_inits
        if own != heads:
            nodes += [_node("Unsqueeze", [out, "at2"], f"{name}_u"), _node("Expand", [f"{name}_u", "rep"], f"{name}_e"),
                      _node("Reshape", [f"{name}_e", "grouped"], f"{name}_g")]
            out = f"{name}_g"
        heads_of[name] = out
    if kv_heads is not None:
        inits += [init("at2", np.array([2], np.int64)),
                  init("rep", np.array([batch, kv_heads, heads // kv_heads, seq, size], np.int64)),
                  init("grouped", np.array([batch, heads, seq, size], np.int64))]
    rank = 3 if three_d else 4
    nodes.append(_node("Transpose", [heads_of["k"]], "kt",
                       perm=list(range(rank - 2)) + [rank - 1, rank - 2]))
    q, kt = heads_of["q"], "kt"
    if scale_on == "both":
        inits.append(init("quarter", np.array(size ** -0.25, dt)))
        nodes += [_node("Mul", [q, "quarter"], "qs"), _node("Mul", [kt, "quarter"], "kts")]
        q, kt = "qs", "kts"
    nodes.append(_node("MatMul", [q, kt], "scores"))
    scores = "scores"
    if scale_on == "scores":
        inits.append(init("root", np.array(np.sqrt(size), dt)))
        nodes.append(_node("Div", ["scores", "root"], "scaled"))
        scores = "scaled"
    inputs = [vi("x", (batch, seq, hidden), t)]
    if mask:
        inputs.append(vi("m", mask_shape(batch, seq, three_d), t))
        inits += [init("one", np.array(1, dt)), init("big", np.array(-10000, dt))]
        nodes += [_node("Sub", ["one", "m"], "inv"), _node("Mul", ["inv", "big"], "additive"),
                  _node("Add", [scores, "additive"], "masked")]
        scores = "masked"
    if causal_add is not None:
        plane = np.asarray(causal_add, dt) if np.ndim(causal_add) else np.triu(np.full((seq, seq), causal_add, dt), 1)
        inits.append(init("tri", plane.reshape((1,) * (rank - 2) + (seq, seq))))
        nodes.append(_node("Add", [scores, "tri"], "tri_masked"))
        scores = "tri_masked"
    if causal is not None:
        cond = np.tril(np.ones((seq, seq), dtype=bool)).reshape((1,) * (rank - 2) + (seq, seq))
        inits += [helper.make_tensor("tril", TensorProto.BOOL, cond.shape, cond.reshape(-1).tolist()),
                  init("fill", np.array(causal, dt))]
        nodes.append(_node("Where", ["tril", scores, "fill"], "causal"))
        scores = "causal"
    nodes += [_node("Softmax", [scores], "p", axis=softmax_axis),
              _node("MatMul", ["p", heads_of["v"]], "o")]
    if three_d:
        nodes.append(_node("Reshape", ["o", "o_s4"], "o4"))
        inits.append(init("o_s4", np.array([batch, heads, seq, size], np.int64)))
    nodes += [_node("Transpose", ["o4" if three_d else "o"], "ot", perm=[0, 2, 1, 3]),
              _node("Reshape", ["ot", "o_s3"], "y")]
    inits.append(init("o_s3", np.array([batch, seq, hidden], np.int64)))
    outputs = [vi("y", None, t)] + ([vi("p", None, t)] if softmax_also_output else [])
    return model(nodes, inputs, outputs, inits)


def mask_shape(batch, seq, three_d):
    """BERT's (batch, 1, 1, keys) padding mask; one mask for every row in the 3-D form."""
    return (1, seq) if three_d else (batch, 1, 1, seq)


def feeds(batch=2, seq=13, heads=2, size=16, mask=False, fp16=False, seed=0, three_d=False):
    rng = np.random.default_rng(seed)
    dt = np.float16 if fp16 else np.float32
    out = {"x": rng.standard_normal((batch, seq, heads * size)).astype(dt)}
    if mask:
        m = (rng.random(mask_shape(batch, seq, three_d)) > 0.3).astype(dt)
        m[..., 0] = 1       # every row keeps at least one key
        out["m"] = m
    return out
