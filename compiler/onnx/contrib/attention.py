"""ONNX Runtime's Attention (BERT-style, packed query/key/value weights) and MultiHeadAttention
(projections made outside it, as its optimizer writes for encoder-decoders and diffusion), spelled
out as the products, scale, additive mask and softmax an exporter writes, which the attention
fusion pass recognises again; a key/value cache given (GPT-2's ``past``, an encoder-decoder's
``past_key`` and ``past_value``) is concatenated ahead of this call's keys and values.

    qkv = input @ weights + bias -> q, k, v (split on the last axis)
    heads: (batch, sequence, heads·size) -> (batch, heads, sequence, size)
    scores = q @ kᵀ · scale + mask;  output = softmax(scores) @ v, heads merged back

The mask is what ONNX Runtime adds: ``mask_filter_value`` (-10000 unless given) where the mask
index says a key is padding (a row of end positions, or a raw 0/1 mask of 2 or 3 axes), the same
again above the diagonal when ``unidirectional`` (the last query seeing every key), plus
``attention_bias``. A cache buffer shared with present (a past sequence length given), rotary
embeddings and the 4-axis mask forms are not expanded."""
from __future__ import annotations

import numpy as np

from .builder import Builder, Unexpandable


def attention(node, b: Builder) -> None:
    """Attention(input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?):
    ``past`` (2, batch, heads, past keys, size) holds the cache GPT-2's decoder carries, and
    ``present`` (output 1) the same with this call's keys and values appended."""
    if b.input(6):
        raise Unexpandable("a cache buffer shared with present (past_sequence_length)")
    if b.attr("do_rotary", 0):
        raise Unexpandable("do_rotary")
    given = b.attr("qkv_hidden_sizes")
    qkv = b.plus(b.op("MatMul", [b.input(0), b.input(1)]), b.input(2))
    q, k, v = _split(b, qkv, [int(n) for n in given] if given else None)
    past = [b.op("Gather", [b.input(4), b.ints(i)], axis=0) for i in (0, 1)] if b.input(4) else None
    k, v = _attend(b, q, k, v, mask=3, bias=5, past=past)
    if b.output(1):
        b.op("Concat", [b.op("Unsqueeze", [x, b.ints([0])]) for x in (k, v)], b.output(1), axis=0)


def multi_head_attention(node, b: Builder) -> None:
    """MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?, past_key?,
    past_value?, ...): the projections already made (``_projections`` says in which forms); bias,
    when given, is the three projections' biases end to end. A self-attention cache, past_key and
    past_value (batch, heads, past keys, size), takes this call's keys and values appended, and
    present_key and present_value (outputs 1 and 2) are the result."""
    if b.input(8) or b.input(9):
        raise Unexpandable("a cache buffer shared with present (past_sequence_length, cache_indirection)")
    has_cache = [bool(b.input(6)), bool(b.input(7))]
    if any(has_cache) and (not all(has_cache) or b.rank(b.input(1)) != 3):
        raise Unexpandable("a cache of keys and values not both given, or not made by this call's projections")
    q, k, v = _projections(b)
    if b.input(3):  # split at the three widths (Shape ops the import folds)
        widths = b.op("Concat", [b.op("Shape", [x], start=-1) for x in (q, k, v)], axis=0)
        biases = [b.fresh(), b.fresh(), b.fresh()]
        b.op("Split", [b.input(3), widths], biases, axis=-1)
        q, k, v = (b.op("Add", [x, bias]) for x, bias in zip((q, k, v), biases))
    past = [b.input(6), b.input(7)] if b.input(6) else None
    k, v = _attend(b, q, k, v, mask=4, bias=5, past=past)
    b.rename(k, b.output(1))
    b.rename(v, b.output(2))


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


def _attend(b: Builder, q: str, k: str, v: str, mask: int, bias: int, past: list[str] | None = None) -> list[str]:
    """softmax(q kᵀ · scale + mask) v over ``num_heads`` heads, into the node's first output;
    ``mask`` and ``bias``: the node's inputs holding the padding mask and the attention bias;
    ``past``: cached keys and values (batch, heads, past keys, size) that this call's follow.
    Returns the keys and values attended to, as heads (the present cache)."""
    heads = int(b.attr("num_heads"))
    like = q
    q, k, v = (b.op("Transpose", [b.op("Reshape", [x, b.ints([0, 0, heads, -1])])], perm=[0, 2, 1, 3])
               for x in (q, k, v))
    if past:
        k, v = (b.op("Concat", [cached, x], axis=2) for cached, x in zip(past, (k, v)))
    scale = float(b.attr("scale", 0.0))
    scale = b.like(scale, like) if scale else default_scale(b, q, like)
    scores = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])]), scale])
    added = _additive_mask(b, scores, mask, bias)
    if added:
        scores = b.op("Add", [scores, added])
    context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    merged = b.op("Transpose", [context], perm=[0, 2, 1, 3])
    b.op("Reshape", [merged, b.ints([0, 0, -1])], b.output(0))
    return [k, v]


def _split(b: Builder, qkv: str, sizes: list[int] | None) -> list[str]:
    """Three parts along the last axis: of ``sizes``, else equal."""
    out = [b.fresh(), b.fresh(), b.fresh()]
    if sizes is None:
        b.op("Split", [qkv], out, axis=-1, num_outputs=3)
    else:
        b.op("Split", [qkv, b.ints(sizes)], out, axis=-1)
    return out


def default_scale(b: Builder, q: str, like: str) -> str:
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
    """``fill`` where a key lies after its query's position, the last query being the last key's
    (queries after the keys a cache holds), built from the scores' shape (the import folds it)."""
    filled = b.filled(b.op("Shape", [scores], start=2), np.float32(fill))
    cached = b.op("Sub", [b.length(scores, 3), b.length(scores, 2)])
    first_hidden = b.op("Add", [cached, b.const(1, "int64")])
    return b.op("CastLike", [b.op("Trilu", [filled, first_hidden], upper=1), scores])


EXPANSIONS = {"Attention": attention, "MultiHeadAttention": multi_head_attention}
