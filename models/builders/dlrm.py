"""DLRM as in the MLPerf Criteo Terabyte reference (dlrm_s_pytorch): a bottom MLP on the 13 dense
features, 26 embedding tables of dimension 128 (one index per table and sample, so each
EmbeddingBag is a Gather), the pairwise dot-product interaction (strictly lower triangle, 351
terms) concatenated with the dense vector (479), and the top MLP ending in a Sigmoid.

The real tables hold ~204 M rows (~26 G parameters, ~100 GB in fp32). ``max_table_rows`` caps
each table (default 100 000 rows); indices fed to a table must be below its capped size.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from models.graph import Graph

VERSION = 1
# Rows per categorical feature with MLPerf's --max-ind-range=40000000.
CRITEO_TB_TABLE_SIZES = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546,
                         403346, 10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984,
                         585935, 12972, 108, 36]
DEFAULT_MAX_ROWS = 100_000


def table_rows(max_table_rows: int | None = DEFAULT_MAX_ROWS) -> list[int]:
    return [n if not max_table_rows else min(n, max_table_rows) for n in CRITEO_TB_TABLE_SIZES]


def _mlp(g: Graph, x: str, sizes: list[int], name: str, sigmoid_last: bool, first_gain: float) -> str:
    for i, (m, n) in enumerate(zip(sizes, sizes[1:])):
        last = i == len(sizes) - 2
        # He scaling after ReLUs (variance-preserving through depth), ``first_gain`` for the
        # layer on raw features, and a small last layer so the Sigmoid is not saturated.
        gain = first_gain if i == 0 else (0.1 if last and sigmoid_last else 2.0)
        w = g.param(f"{name}.{2 * i}.weight", (n, m), "normal", math.sqrt(gain / m))
        b = g.param(f"{name}.{2 * i}.bias", (n,), "normal", math.sqrt(1.0 / n) * 0.1)
        x = g.op("Gemm", [x, w, b], transB=1)
        x = g.op("Sigmoid" if (last and sigmoid_last) else "Relu", [x])
    return x


def build(dense_features: int = 13, bottom_mlp=(512, 256, 128), top_mlp=(1024, 1024, 512, 256, 1),
          embedding_dim: int = 128, max_table_rows: int | None = DEFAULT_MAX_ROWS,
          num_tables: int = 26) -> Graph:
    g = Graph("dlrm", "DLRM, MLPerf Criteo Terabyte configuration")
    rows = table_rows(max_table_rows)[:num_tables]
    dense = g.input("dense_x", TensorProto.FLOAT, ["batch", dense_features])
    # Dense features are log-transformed counts, ~[0, 4): second moment ~5, hence gain 1/5.
    x = _mlp(g, dense, [dense_features, *bottom_mlp], "bot_l", sigmoid_last=False, first_gain=0.2)
    axes = g.const(np.array([1], np.int64), name="axes")
    feats = [g.op("Unsqueeze", [x, axes])]
    for t, n in enumerate(rows):
        idx = g.input(f"sparse_{t}", TensorProto.INT64, ["batch"])
        # Table entries ~ N(0, dim^-1/4): dot products of two embeddings are O(1).
        table = g.param(f"emb_l.{t}.weight", (n, embedding_dim), "normal", embedding_dim ** -0.25)
        feats.append(g.op("Unsqueeze", [g.op("Gather", [table, idx], axis=0), axes]))
    t_mat = g.op("Concat", feats, axis=1)                                         # [batch, F, d]
    z = g.op("MatMul", [t_mat, g.op("Transpose", [t_mat], perm=[0, 2, 1])])       # [batch, F, F]
    f = len(feats)
    flat = g.op("Reshape", [z, g.const(np.array([0, f * f], np.int64), name="shape")])
    lower = [i * f + j for i in range(f) for j in range(i)]
    zflat = g.op("Gather", [flat, g.const(np.array(lower, np.int64), name="tril_indices")], axis=1)
    r = g.op("Concat", [x, zflat], axis=1)
    p = _mlp(g, r, [bottom_mlp[-1] + len(lower), *top_mlp], "top_l", sigmoid_last=True, first_gain=1.0)
    g.output(p, "click_probability", shape=["batch", top_mlp[-1]])
    return g
