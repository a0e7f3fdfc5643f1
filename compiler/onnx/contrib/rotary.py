"""ONNX Runtime's RotaryEmbedding (its optimizer's fusion of Llama, Phi and Mistral rotations) as
the standard RotaryEmbedding of opset 23, which computes the same thing: the caches indexed by
position, halves or interleaved pairs, (batch, heads, sequence, size) for four axes.

Two spellings differ: the inputs come in another order (input, position_ids, cos, sin), and a
position_ids of one element is the position of the first token, the others following it (the
standard op takes one position per token). ``scale`` is ignored, as ONNX Runtime ignores it."""
from __future__ import annotations

from .builder import Builder, Unexpandable


def rotary_embedding(node, b: Builder) -> None:
    if b.attr("is_packed_batching", 0):
        raise Unexpandable("is_packed_batching")
    x, positions = b.input(0), b.input(1)
    rank = b.rank(positions)
    if rank == 1:
        positions = _from_start(b, x, positions)
    elif rank != 2:
        raise Unexpandable("position_ids not declared of 1 or 2 axes")
    attrs = {k: int(b.attr(k)) for k in ("interleaved", "num_heads", "rotary_embedding_dim") if b.attr(k)}
    b.op("RotaryEmbedding", [x, b.input(2), b.input(3), positions], b.output(0), **attrs)


def _from_start(b: Builder, x: str, start: str) -> str:
    """(batch, sequence) positions start, start + 1, ... for every batch item; the sequence is
    the second axis of a 3-axis input and the third of a 4-axis one (batch, heads, sequence, size)."""
    rank = b.rank(x)
    if rank not in (3, 4):
        raise Unexpandable("input not declared of 3 or 4 axes")
    batch, sequence = b.length(x, 0), b.length(x, 1 if rank == 3 else 2)
    first = b.op("Squeeze", [b.op("Cast", [start], to=7), b.ints([0])])  # int64 scalar
    row = b.op("Range", [first, b.op("Add", [first, sequence]), b.const(1, "int64")])
    shape = b.op("Concat", [b.op("Unsqueeze", [v, b.ints([0])]) for v in (batch, sequence)], axis=0)
    return b.op("Expand", [b.op("Unsqueeze", [row, b.ints([0])]), shape])


EXPANSIONS = {"RotaryEmbedding": rotary_embedding}
