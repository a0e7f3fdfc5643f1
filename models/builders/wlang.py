"""PyTorch examples' word language model: Embedding → 2-layer LSTM/GRU → Linear decoder.

The graph is sequence-first like the example; token ids come in batch-major ([batch, seq], so the
batch dimension leads as in every other row) and are transposed once. The recurrent layers are ONNX
LSTM/GRU nodes stacked as the PyTorch exporter writes them (per-layer initial states sliced from
the [layers, batch, hidden] state inputs, Squeeze of the direction axis, GRU with
linear_before_reset=1), with the example's uniform(-0.1, 0.1) embedding/decoder init and
PyTorch's uniform(±1/sqrt(hidden)) recurrent init.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from models.graph import Graph

VERSION = 2


def build(cell: str = "lstm", vocab: int = 33278, emb: int = 200, hidden: int = 200, layers: int = 2,
          seq: int = 35) -> Graph:
    g = Graph(f"wlang_{cell}", f"word language model, {cell.upper()}")
    lstm = cell == "lstm"
    gates = 4 if lstm else 3
    ids = g.op("Transpose", [g.input("input", TensorProto.INT64, ["batch", seq])], perm=[1, 0])
    h0 = g.input("h0", TensorProto.FLOAT, [layers, "batch", hidden])
    c0 = g.input("c0", TensorProto.FLOAT, [layers, "batch", hidden]) if lstm else None
    x = g.op("Gather", [g.param("encoder.weight", (vocab, emb), "uniform", -0.1, 0.1), ids], axis=0)
    k = 1.0 / math.sqrt(hidden)
    hs, cs = [], []
    for layer in range(layers):
        cin = emb if layer == 0 else hidden
        w = g.param(f"rnn.weight_ih_l{layer}", (1, gates * hidden, cin), "uniform", -k, k)
        r = g.param(f"rnn.weight_hh_l{layer}", (1, gates * hidden, hidden), "uniform", -k, k)
        b = g.param(f"rnn.bias_l{layer}", (1, 2 * gates * hidden), "uniform", -k, k)
        sl = lambda t: g.op("Slice", [t, g.const(np.array([layer], np.int64), name="starts"),  # noqa: E731
                                      g.const(np.array([layer + 1], np.int64), name="ends"),
                                      g.const(np.array([0], np.int64), name="axes")])
        ins = [x, w, r, b, "", sl(h0)] + ([sl(c0)] if lstm else [])
        if lstm:
            y, hn, cn = g.op("LSTM", ins, n_out=3, hidden_size=hidden, name=f"LSTM_{layer}")
            cs.append(cn)
        else:
            y, hn = g.op("GRU", ins, n_out=2, hidden_size=hidden, linear_before_reset=1, name=f"GRU_{layer}")
        hs.append(hn)
        x = g.op("Squeeze", [y, g.const(np.array([1], np.int64), name="axes")])
    w = g.param("decoder.weight", (hidden, vocab), "uniform", -0.1, 0.1)
    decoded = g.op("Add", [g.op("MatMul", [x, w]), g.param("decoder.bias", (vocab,), "uniform", -0.1, 0.1)])
    g.output(decoded, "output", shape=[seq, "batch", vocab])
    g.output(g.op("Concat", hs, axis=0), "hn", shape=[layers, "batch", hidden])
    if lstm:
        g.output(g.op("Concat", cs, axis=0), "cn", shape=[layers, "batch", hidden])
    return g
