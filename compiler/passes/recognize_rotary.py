"""Rotary position embeddings as exporters write them made one RotaryEmbedding:

    x * cos + Concat(Neg(x[..., h:]), x[..., :h], axis=-1) * sin        (h = half of x's last axis)

with ``cos`` and ``sin`` literals whose two halves along the last axis are equal (Llama, Mistral,
Qwen2 and Phi build them from ``cat(freqs, freqs)``) and that vary along no head axis, becomes
``RotaryEmbedding(x, cos_cache, sin_cache)`` (the ONNX op, halves form, no position ids) over
x = (batch, heads, sequence, head size), with caches (batch or 1, sequence, h). Exported, the
rotation is a Neg, two Slices, a Concat and three products and a sum per query and key: on a GPU a
Concat that copies both halves and two more passes over x.

A rotation of the first r features of each head whose result is concatenated with the rest
(``Concat(rotated, x[..., r:])``: Phi, GPT-NeoX) then becomes one RotaryEmbedding of x with
``rotary_embedding_dim`` r (``RecognizePartialRotary``, once dead code is gone). A rotation over another axis, caches that are not literals or whose
halves differ (interleaved pairs), or a middle value another instruction also reads is left alone.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ops.slice_pad import axes_steps, slice_bounds

from .rewrite import ChainRecognizer, only_user, replace_chain


def _other(binary, value):
    return binary.inputs[1] if binary.inputs[0] is value else binary.inputs[0]


def _last_axis_range(ins, width: int):
    """(start, end) that Slice ``ins`` takes along its input's last axis, step 1, other axes
    whole; else None."""
    if ins.op != "Slice" or ins.attrs.get("dynamic") or len(ins.inputs) != 1:
        return None
    rank = ins.inputs[0].shape.ndim
    axes, steps = axes_steps(ins.attrs, rank)
    if list(axes) != [rank - 1] or list(steps) != [1]:
        return None
    return slice_bounds(width, ins.attrs["starts"][0], ins.attrs["ends"][0], 1)


def _rotated_half(concat):
    """The x of ``concat`` = Concat(Neg(x[..., h:]), x[..., :h]) along the last axis, else None."""
    if len(concat.inputs) != 2 or int(concat.attrs.get("axis", 0)) not in (-1, concat.shape.ndim - 1):
        return None
    neg, low = concat.inputs
    if neg.op != "Neg" or only_user(neg) is not concat or only_user(low) is not concat:
        return None
    high = neg.inputs[0]
    if only_user(high) is not neg or high.inputs[:1] != low.inputs[:1] or not high.inputs:
        return None
    x = high.inputs[0]
    width = x.shape.lens[-1] if x.shape.static and x.shape.ndim == 4 else None
    if not width or width % 2:
        return None
    half = width // 2
    if _last_axis_range(high, width) != (half, width) or _last_axis_range(low, width) != (0, half):
        return None
    return x


def _cache(value, x_lens):
    """Literal ``value`` (cos or sin, broadcast against x of ``x_lens``) as a (batch or 1,
    sequence, half) cache, or None when it varies along the heads or its halves differ."""
    if value.op != LITERAL:
        return None
    v = np.asarray(value.value)
    if v.ndim > 4:
        return None
    v = v.reshape((1,) * (4 - v.ndim) + v.shape)
    batch, _heads, seq, width = x_lens
    if v.shape[0] not in (1, batch) or v.shape[1] != 1 or v.shape[2:] != (seq, width):
        return None
    half = width // 2
    if not np.array_equal(v[..., :half], v[..., half:]):
        return None
    return np.ascontiguousarray(v[:, 0, :, :half])


def match(concat):
    """(x, cos cache, sin cache, the sum) of the rotation through ``concat``, else None."""
    x = _rotated_half(concat)
    by_sin = only_user(concat, "Mul") if x is not None else None
    total = only_user(by_sin, "Add") if by_sin is not None else None
    if total is None:
        return None
    by_cos = _other(total, by_sin)
    if by_cos.op != "Mul" or only_user(by_cos) is not total or x not in by_cos.inputs:
        return None
    lens = tuple(x.shape.lens)
    cos, sin = _cache(_other(by_cos, x), lens), _cache(_other(by_sin, concat), lens)
    if cos is None or sin is None or tuple(total.shape.lens) != lens or total.shape.dtype != x.shape.dtype:
        return None
    return x, cos, sin, total


def _replace(module, x, cos, sin, total):
    attrs = {"interleaved": 0, "rotary_embedding_dim": 0, "num_heads": 0, "positions": False}
    replace_chain(module, total, "RotaryEmbedding", [x], attrs, literals=[cos, sin])


def RecognizeRotary() -> ChainRecognizer:  # noqa: N802 - a pass, named as the pass classes are
    return ChainRecognizer("recognize_rotary", "Concat", match, _replace)


def match_partial(concat):
    """(x, the rotation, ``concat``) where ``concat`` = Concat(RotaryEmbedding(x[..., :r]),
    x[..., r:]) along the last axis: a rotation of part of each head (Phi, GPT-NeoX); else None.
    Runs once the replaced chains are gone (their Slices of x read it no more)."""
    if len(concat.inputs) != 2 or int(concat.attrs.get("axis", 0)) not in (-1, concat.shape.ndim - 1):
        return None
    rotated, rest = concat.inputs
    if rotated.op != "RotaryEmbedding" or rotated.attrs.get("rotary_embedding_dim") \
            or only_user(rotated) is not concat or only_user(rest) is not concat:
        return None
    part = rotated.inputs[0]
    if not part.inputs or rest.inputs[:1] != part.inputs[:1] or only_user(part) is not rotated:
        return None
    x = part.inputs[0]
    width, turned = x.shape.lens[-1], part.shape.lens[-1]
    if _last_axis_range(part, width) != (0, turned) or _last_axis_range(rest, width) != (turned, width):
        return None
    return x, rotated, concat


def _widen(module, x, rotated, concat):
    attrs = dict(rotated.attrs, rotary_embedding_dim=rotated.shape.lens[-1])
    replace_chain(module, concat, "RotaryEmbedding", [x, *rotated.inputs[1:]], attrs)


def RecognizePartialRotary() -> ChainRecognizer:  # noqa: N802 - as above
    return ChainRecognizer("recognize_partial_rotary", "Concat", match_partial, _widen)
