"""BERT encoder + pooler + sequence classifier, in the op patterns of two exporters.

``style="onnx"`` (PyTorch exporter, opset 17): int64 inputs, Gather embeddings with a constant
position-id slice, LayerNormalization, MatMul+Add projections, Reshape/Transpose heads, a
(1 - mask) * -10000 additive mask, Softmax attention and Erf-form GELU.

``style="tf"`` (tf2onnx from a TF checkpoint): int32 inputs cast to int64, token types through a
one-hot (Equal + Cast) MatMul, position embeddings sliced from the table, LayerNorm decomposed
into ReduceMean/Sub/Mul/Sqrt/Reciprocal, projections and attention as Einsum (Keras EinsumDense),
Erf-form GELU, and softmax probabilities next to the logits.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from models.graph import Graph

VERSION = 1


class _Bert:
    def __init__(self, g: Graph, hidden: int, heads: int, seq: int):
        self.g, self.h, self.heads, self.seq = g, hidden, heads, seq
        self.dh = hidden // heads

    # weights ----------------------------------------------------------------------------
    def w(self, name: str, shape, fan_in: int, gain: float = 1.0) -> str:
        return self.g.param(name, shape, "normal", math.sqrt(gain / fan_in))

    def b(self, name: str, n) -> str:
        return self.g.param(name, n if isinstance(n, tuple) else (n,), "uniform", -0.02, 0.02)

    def ln_params(self, name: str) -> tuple[str, str]:
        return (self.g.param(f"{name}.weight", (self.h,), "uniform", 0.9, 1.1),
                self.g.param(f"{name}.bias", (self.h,), "uniform", -0.05, 0.05))

    def gelu(self, x: str) -> str:
        g = self.g
        e = g.op("Erf", [g.op("Div", [x, g.const(np.float32(math.sqrt(2.0)), name="sqrt2")])])
        one_plus = g.op("Add", [e, g.const(np.float32(1.0), name="one")])
        return g.op("Mul", [g.op("Mul", [x, one_plus]), g.const(np.float32(0.5), name="half")])


class _OnnxStyle(_Bert):
    def layer_norm(self, x: str, name: str) -> str:
        s, b = self.ln_params(name)
        return self.g.op("LayerNormalization", [x, s, b], axis=-1, epsilon=1e-12, name=name)

    def dense(self, x: str, cin: int, cout: int, name: str, gain: float = 1.0) -> str:
        w = self.w(f"{name}.weight", (cin, cout), cin, gain)
        return self.g.op("Add", [self.b(f"{name}.bias", cout), self.g.op("MatMul", [x, w])])

    def heads_view(self, x: str, perm) -> str:
        shape = self.g.const(np.array([0, -1, self.heads, self.dh], np.int64), name="shape")
        return self.g.op("Transpose", [self.g.op("Reshape", [x, shape])], perm=perm)

    def attention(self, x: str, mask: str, n: str) -> str:
        g = self.g
        q = self.heads_view(self.dense(x, self.h, self.h, f"{n}.attention.self.query"), [0, 2, 1, 3])
        k = self.heads_view(self.dense(x, self.h, self.h, f"{n}.attention.self.key"), [0, 2, 3, 1])
        v = self.heads_view(self.dense(x, self.h, self.h, f"{n}.attention.self.value"), [0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q, k]), g.const(np.float32(math.sqrt(self.dh)), name="scale")])
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, g.const(np.array([0, -1, self.h], np.int64), name="shape")])
        out = self.dense(ctx, self.h, self.h, f"{n}.attention.output.dense", gain=0.5)
        return self.layer_norm(g.op("Add", [out, x]), f"{n}.attention.output.LayerNorm")

    def ffn(self, x: str, inter: int, n: str) -> str:
        y = self.gelu(self.dense(x, self.h, inter, f"{n}.intermediate.dense"))
        y = self.dense(y, inter, self.h, f"{n}.output.dense", gain=0.5)
        return self.layer_norm(self.g.op("Add", [y, x]), f"{n}.output.LayerNorm")


class _TfStyle(_Bert):
    def layer_norm(self, x: str, name: str) -> str:
        g = self.g
        s, b = self.ln_params(name)
        mean = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
        centered = g.op("Sub", [x, mean])
        var = g.op("ReduceMean", [g.op("Mul", [centered, centered])], axes=[-1], keepdims=1)
        rstd = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [var, g.const(np.float32(1e-12), name="eps")])])])
        return g.op("Add", [g.op("Mul", [centered, g.op("Mul", [rstd, s])]), b])

    def einsum_dense(self, x: str, eq: str, wshape, bshape, fan_in: int, name: str, gain: float = 1.0) -> str:
        w = self.w(f"{name}/kernel", wshape, fan_in, gain)
        return self.g.op("Add", [self.g.op("Einsum", [x, w], equation=eq), self.b(f"{name}/bias", tuple(bshape))])

    def attention(self, x: str, mask: str, n: str) -> str:
        g, h, nh, dh = self.g, self.h, self.heads, self.dh
        proj = lambda which: self.einsum_dense(x, "abc,cde->abde", (h, nh, dh), (nh, dh), h,  # noqa: E731
                                               f"{n}/attention/self/{which}")
        q, k, v = proj("query"), proj("key"), proj("value")
        q = g.op("Mul", [q, g.const(np.float32(1.0 / math.sqrt(dh)), name="scale")])
        scores = g.op("Einsum", [k, q], equation="aecd,abcd->acbe")
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        ctx = g.op("Einsum", [probs, v], equation="acbe,aecd->abcd")
        out = self.einsum_dense(ctx, "abcd,cde->abe", (nh, dh, h), (h,), h, f"{n}/attention/output/dense", 0.5)
        return self.layer_norm(g.op("Add", [out, x]), f"{n}/attention/output/LayerNorm")

    def ffn(self, x: str, inter: int, n: str) -> str:
        y = self.gelu(self.einsum_dense(x, "abc,cd->abd", (self.h, inter), (inter,), self.h, f"{n}/intermediate/dense"))
        y = self.einsum_dense(y, "abc,cd->abd", (inter, self.h), (self.h,), inter, f"{n}/output/dense", 0.5)
        return self.layer_norm(self.g.op("Add", [y, x]), f"{n}/output/LayerNorm")


def build(style: str = "onnx", layers: int = 12, hidden: int = 768, heads: int = 12, intermediate: int = 3072,
          vocab: int = 30522, max_positions: int = 512, type_vocab: int = 2, seq: int = 128,
          num_labels: int = 2) -> Graph:
    g = Graph(f"bert_{style}", f"BERT sequence classifier, {style} export patterns")
    tf = style == "tf"
    m = (_TfStyle if tf else _OnnxStyle)(g, hidden, heads, seq)
    itype = TensorProto.INT32 if tf else TensorProto.INT64
    names = ("input_ids", "input_mask", "segment_ids") if tf else ("input_ids", "attention_mask", "token_type_ids")
    ids, mask_in, types = (g.input(n, itype, ["batch", seq]) for n in names)
    if tf:
        ids, types = g.op("Cast", [ids], to=TensorProto.INT64), g.op("Cast", [types], to=TensorProto.INT64)
    emb = lambda name, rows: g.param(name, (rows, hidden), "normal", 1.0)  # noqa: E731 - O(1) before LayerNorm
    sep = "/" if tf else "."
    pre = "bert/embeddings" if tf else "bert.embeddings"
    x = g.op("Gather", [emb(f"{pre}{sep}word_embeddings", vocab), ids], axis=0)
    pos_table = emb(f"{pre}{sep}position_embeddings", max_positions)
    type_table = emb(f"{pre}{sep}token_type_embeddings", type_vocab)
    if tf:
        one_hot = g.op("Cast", [g.op("Equal", [g.op("Unsqueeze", [types, g.const(np.array([-1], np.int64), name="axes")]),
                                               g.const(np.arange(type_vocab, dtype=np.int64), name="type_range")])],
                       to=TensorProto.FLOAT)
        x = g.op("Add", [x, g.op("MatMul", [one_hot, type_table])])
        pos = g.op("Slice", [pos_table, g.const(np.array([0], np.int64), name="starts"),
                             g.const(np.array([seq], np.int64), name="ends"), g.const(np.array([0], np.int64), name="axes")])
        x = g.op("Add", [x, pos])
    else:
        pos_ids = g.const(np.arange(seq, dtype=np.int64)[None, :], name="position_ids")
        x = g.op("Add", [x, g.op("Gather", [type_table, types], axis=0)])
        x = g.op("Add", [x, g.op("Gather", [pos_table, pos_ids], axis=0)])
    x = m.layer_norm(x, f"{pre}{sep}LayerNorm")
    # Additive mask [batch, 1, 1, seq]: 0 where attended, -10000 where masked.
    mask = g.op("Cast", [g.op("Unsqueeze", [mask_in, g.const(np.array([1, 2], np.int64), name="axes")])],
                to=TensorProto.FLOAT)
    mask = g.op("Mul", [g.op("Sub", [g.const(np.float32(1.0), name="one"), mask]),
                        g.const(np.float32(-10000.0), name="neg")])
    for i in range(layers):
        n = f"bert/encoder/layer_{i}" if tf else f"bert.encoder.layer.{i}"
        x = m.ffn(m.attention(x, mask, n), intermediate, n)
    if tf:
        first = g.op("Squeeze", [g.op("Slice", [x, g.const(np.array([0], np.int64), name="starts"),
                                                g.const(np.array([1], np.int64), name="ends"),
                                                g.const(np.array([1], np.int64), name="axes")]),
                                 g.const(np.array([1], np.int64), name="axes")])
        pooled = g.op("Tanh", [m.einsum_dense(first, "ab,bc->ac", (hidden, hidden), (hidden,), hidden, "bert/pooler/dense")])
        logits = g.op("Add", [g.op("MatMul", [pooled, m.w("output_weights", (hidden, num_labels), hidden)]),
                              m.b("output_bias", num_labels)])
        g.output(g.op("Softmax", [logits], axis=-1), "probabilities", shape=["batch", num_labels])
        g.output(logits, "logits", shape=["batch", num_labels])
    else:
        first = g.op("Gather", [x, g.const(np.int64(0), name="index")], axis=1)
        pooled = g.op("Tanh", [m.dense(first, hidden, hidden, "bert.pooler.dense")])
        logits = m.dense(pooled, hidden, num_labels, "classifier")
        g.output(logits, "logits", shape=["batch", num_labels])
    return g
