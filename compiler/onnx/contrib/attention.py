"""ONNX Runtime's Attention (BERT-style, packed query/key/value weights) and MultiHeadAttention
(projections made outside it, as its optimizer writes for encoder-decoders and diffusion), spelled
out as the products, scale, additive mask and softmax an exporter writes, which the attention
fusion pass recognises again.

    qkv = input @ weights + bias -> q, k, v (split on the last axis)
    heads: (batch, sequence, heads·size) -> (batch, heads, sequence, size)
    scores = q @ kᵀ · scale + mask;  output = softmax(scores) @ v, heads merged back

The mask is what ONNX Runtime adds: ``mask_filter_value`` (-10000 unless given) where the mask
index says a key is padding (a row of end positions, or a raw 0/1 mask of 2 or 3 axes), the same
again above the diagonal when ``unidirectional``, plus ``attention_bias``. A key/value cache
(past, present), rotary embeddings and the 4-axis mask forms are not expanded."""
from __future__ import annotations

import numpy as np

from .builder import Builder, Unexpandable


def attention(node, b: Builder) -> None:
    """Attention(input, weights, bias?, mask_index?, past?, attention_bias?, ...)."""
    if b.input(4) or b.input(6) or b.output(1):
        raise Unexpandable("a key/value cache (past, present)")
    if b.attr("do_rotary", 0):
        raise Unexpandable("do_rotary")
    given = b.attr("qkv_hidden_sizes")
    qkv = b.plus(b.op("MatMul", [b.input(0), b.input(1)]), b.input(2))
    q, k, v = _split(b, qkv, [int(n) for n in given] if given else None)
    _attend(b, q, k, v, mask=3, bias=5)


def multi_head_attention(node, b: Builder) -> None:
    """MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?, ...): the
    projections already made (``_projections`` says in which forms); bias, when given, is the
    three projections' biases end to end. A key/value cache is not expanded."""
    if b.input(6) or b.input(7) or b.output(1) or b.output(2):
        raise Unexpandable("a key/value cache (past, present)")
    q, k, v = _projections(b)
    if b.input(3):  # split at the three widths (Shape ops the import folds)
        widths = b.op("Concat", [b.op("Shape", [x], start=-1) for x in (q, k, v)], axis=0)
        biases = [b.fresh(), b.fresh(), b.fresh()]
        b.op("Split", [b.input(3), widths], biases, axis=-1)
        q, k, v = (b.op("Add", [x, bias]) for x, bias in zip((q, k, v), biases))
    _attend(b, q, k, v, mask=4, bias=5)


def _projections(b: Builder) -> list[str]:
    """Query, key and value, each (batch, sequence, heads·size), from the forms ONNX Runtime's
    optimizer writes: each such already; query packed with both (batch, sequence, heads, 3, size)
    with no key or value (self-attention); key packed with value (batch, keys, heads, 2, size)
    with no value (cross-attention, as in Stable Diffusion's UNet); key and value already as heads
    (batch, heads, keys, size)."""
    q, k, v = b.input(0), b.input(1), b.input(2)
    rank_q, rank_k, rank_v = (b.rank(x) if x else None for x in (q, k, v))
    if rank_q == 5 and not k and not v:
        return _unpack(b, q, 3)
    if rank_q != 3:
        raise Unexpandable("query not declared of 3 axes, nor of 5 with key and value packed in")
    if rank_k == 5 and not v:
        return [q, *_unpack(b, k, 2)]
    if rank_k == rank_v == 4 and not b.input(3):
        return [q, *(b.op("Reshape", [b.op("Transpose", [x], perm=[0, 2, 1, 3]), b.ints([0, 0, -1])]) for x in (k, v))]
    if rank_k == rank_v == 3:
        return [q, k, v]
    raise Unexpandable("key and value not declared in a form that is expanded")


def _unpack(b: Builder, packed: str, parts: int) -> list[str]:
    """(batch, sequence, heads, parts, size) as ``parts`` tensors of (batch, sequence, heads·size)."""
    names = [b.fresh() for _ in range(parts)]
    b.op("Split", [packed], names, axis=3, num_outputs=parts)
    return [b.op("Reshape", [x, b.ints([0, 0, -1])]) for x in names]


def _attend(b: Builder, q: str, k: str, v: str, mask: int, bias: int) -> None:
    """softmax(q kᵀ · scale + mask) v over ``num_heads`` heads, into the node's first output;
    ``mask`` and ``bias``: the node's inputs holding the padding mask and the attention bias."""
    heads = int(b.attr("num_heads"))
    like = q
    q = b.op("Transpose", [b.op("Reshape", [q, b.ints([0, 0, heads, -1])])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [k, b.ints([0, 0, heads, -1])])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [v, b.ints([0, 0, heads, -1])])], perm=[0, 2, 1, 3])
    scale = float(b.attr("scale", 0.0))
    scale = b.like(scale, like) if scale else _default_scale(b, q, like)
    scores = b.op("Mul", [b.op("MatMul", [q, k]), scale])
    added = _additive_mask(b, scores, mask, bias)
    if added:
        scores = b.op("Add", [scores, added])
    context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    merged = b.op("Transpose", [context], perm=[0, 2, 1, 3])
    b.op("Reshape", [merged, b.ints([0, 0, -1])], b.output(0))


def _split(b: Builder, qkv: str, sizes: list[int] | None) -> list[str]:
    """Three parts along the last axis: of ``sizes``, else equal."""
    out = [b.fresh(), b.fresh(), b.fresh()]
    if sizes is None:
        b.op("Split", [qkv], out, axis=-1, num_outputs=3)
    else:
        b.op("Split", [qkv, b.ints(sizes)], out, axis=-1)
    return out


def _default_scale(b: Builder, q: str, like: str) -> str:
    """1 / sqrt(head size), from the shape of the query heads: the import knows it, so this
    folds to a constant there."""
    size = b.op("Cast", [b.length(q, 3)], to=1)
    return b.op("CastLike", [b.op("Reciprocal", [b.op("Sqrt", [size])]), like])


def _additive_mask(b: Builder, scores: str, mask: int, bias: int) -> str | None:
    """The sum of what is added to the scores (batch, heads, sequence, keys), or None."""
    fill = float(b.attr("mask_filter_value", -10000.0))
    terms = []
    if b.input(mask):
        terms.append(_padding_mask(b, b.input(mask), scores, fill))
    if b.attr("unidirectional", 0):
        terms.append(_causal_mask(b, scores, fill))
    if b.input(bias):
        terms.append(b.input(bias))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = b.op("Add", [total, term])
    return total


def _padding_mask(b: Builder, mask: str, scores: str, fill: float) -> str:
    """``fill`` where the mask index marks a key as padding, 0 elsewhere, broadcast over heads
    (and queries, for masks of batch and keys)."""
    rank = b.rank(mask)
    if rank == 1:  # each row's end: keys at or past it are padding
        positions = b.op("Range", [b.ints(0), b.length(scores, 3), b.ints(1)])
        mask = b.op("Less", [positions, b.op("Unsqueeze", [b.op("Cast", [mask], to=7), b.ints([1])])])
    elif rank not in (2, 3):
        raise Unexpandable(f"a mask index of {'undeclared rank' if rank is None else f'rank {rank}'}")
    keep = b.op("Cast", [mask], to=1)
    added = b.op("Mul", [b.op("Sub", [b.const(1.0, "float32"), keep]), b.const(fill, "float32")])
    axes = [1, 2] if rank in (1, 2) else [1]
    return b.op("CastLike", [b.op("Unsqueeze", [added, b.ints(axes)]), scores])


def _causal_mask(b: Builder, scores: str, fill: float) -> str:
    """``fill`` above the diagonal of (queries, keys), built from the scores' shape (the import
    folds it to a constant)."""
    filled = b.filled(b.op("Shape", [scores], start=2), np.float32(fill))
    return b.op("CastLike", [b.op("Trilu", [filled, b.ints(1)], upper=1), scores])


EXPANSIONS = {"Attention": attention, "MultiHeadAttention": multi_head_attention}
