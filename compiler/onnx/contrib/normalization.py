"""Layer norms as ONNX Runtime's optimizer writes them: with the residual add folded in (skip),
without the mean (simplified, that is RMSNorm), and the embedding layer norm of BERT-like models."""
from __future__ import annotations

import numpy as np

from .builder import Builder, Unexpandable, present

# ONNX Runtime's default epsilon of the skip layer norms.
SKIP_EPSILON = 1e-12


def _skip_sum(b: Builder, bias_input: int) -> str:
    """(input + bias) + skip, the sum the norm reads; written to the node's fourth output when
    that is used (input_skip_bias_sum). The bias goes on the input first, as an exporter writes a
    linear layer's bias before the residual: ONNX Runtime's optimizer moved the bias of the product
    that feeds ``input`` here, and this order gives it back to that product's epilogue."""
    return b.op("Add", [b.plus(b.input(0), b.input(bias_input)), b.input(1)], b.output(3))


def skip_layer_norm(node, b: Builder) -> None:
    """SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?,
    input_skip_bias_sum?: LayerNormalization over the last axis of input + skip + bias."""
    total = _skip_sum(b, 4)
    b.op("LayerNormalization", present([total, b.input(2), b.input(3)]), [b.output(0), b.output(1), b.output(2)], axis=-1,
         epsilon=float(b.attr("epsilon", SKIP_EPSILON)))


def skip_simplified_layer_norm(node, b: Builder) -> None:
    """SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> output, mean?, inv_std_var?,
    input_skip_bias_sum?: RMSNormalization over the last axis of input + skip + bias."""
    b.refuse_outputs(1, 2, why="the mean or inverse standard deviation output")
    total = _skip_sum(b, 3)
    b.op("RMSNormalization", [total, b.input(2)], b.output(0), axis=-1,
         epsilon=float(b.attr("epsilon", SKIP_EPSILON)))


def simplified_layer_norm(node, b: Builder) -> None:
    """SimplifiedLayerNormalization(X, scale) -> Y, inv_std_var?: RMSNormalization."""
    b.refuse_outputs(1, why="the inverse standard deviation output")
    b.op("RMSNormalization", [b.input(0), b.input(1)], b.output(0), axis=int(b.attr("axis", -1)),
         epsilon=float(b.attr("epsilon", 1e-5)))


def embed_layer_norm(node, b: Builder) -> None:
    """EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
    segment_embedding?, gamma, beta, mask?, position_ids?) -> output, mask_index,
    embedding_sum?: the three embeddings looked up and summed, then LayerNormalization over the
    last axis; mask_index is each row's count of ones in the mask (zeros without a mask)."""
    if int(b.attr("mask_index_type", 1)) != 1:
        raise Unexpandable("mask_index_type other than 1")
    ids = b.input(0)
    positions = b.input(8)
    if not positions:
        positions = b.op("Unsqueeze", [b.op("Range", [b.ints(0), b.length(ids, 1), b.ints(1)]), b.ints([0])])
    total = b.op("Add", [b.op("Gather", [b.input(2), ids], axis=0),
                         b.op("Gather", [b.input(3), positions], axis=0)])
    if b.input(1) and b.input(4):
        total = b.op("Add", [total, b.op("Gather", [b.input(4), b.input(1)], axis=0)])
    total = b.rename(total, b.output(2))
    b.op("LayerNormalization", [total, b.input(5), b.input(6)], b.output(0), axis=-1,
         epsilon=float(b.attr("epsilon", SKIP_EPSILON)))
    if b.output(1):
        if b.input(7):
            count = b.op("ReduceSum", [b.op("Cast", [b.input(7)], to=7), b.ints([1])], keepdims=0)
            b.op("Cast", [count], b.output(1), to=6)
        else:
            b.rename(b.filled(b.op("Shape", [ids], end=1), np.int32(0)), b.output(1))


EXPANSIONS = {"SkipLayerNormalization": skip_layer_norm,
              "SkipSimplifiedLayerNormalization": skip_simplified_layer_norm,
              "SimplifiedLayerNormalization": simplified_layer_norm,
              "EmbedLayerNormalization": embed_layer_norm}
