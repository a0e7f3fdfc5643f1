"""Recognise scaled dot-product attention spelled out in primitive ops and replace it with one
``Attention`` instruction (the ONNX op, whose reference semantics the ref target runs), so a
target can run it as one fused kernel that never writes the score matrix.

The form exporters emit (PyTorch's two exporters, tf2onnx, hand-written transformers)::

    MatMul(Q', K') -> [Mul | Div by a scalar] -> [Add mask] -> Softmax(last axis) -> MatMul(., V)

where ``Q'`` is Q, optionally times or divided by a scalar, and ``K'`` is K transposed over its
last two axes (a ``Transpose``, or any value of that shape), optionally scaled too (PyTorch's
exporter puts the square root of the scale on both). Casts that change nothing sit between the
steps in fp16 programs and are stepped over. Every intermediate must have the chain as its only
reader, so nothing else needs the scores.

Q, K and V are 4-D (batch, heads, sequence, head size) or 3-D (batch·heads, sequence, head
size); 3-D operands take a leading axis of one (a view). The mask may be any tensor that
broadcasts to the scores; it is left-padded to 4-D the same way. Which attentions to take is the
target's choice (``accept``): a gpu takes those its fused kernel runs and leaves the rest as they
were.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape
from compiler.ops.attention import attention_attrs

from .rewrite import substitute


@dataclass
class Match:
    """One recognised attention: its operands, scale and the instructions it replaces."""
    q: object
    k_transposed: object          # the value of shape (..., head size, keys)
    v: object
    mask: object | None
    scale: float
    softmax: object
    output: object                # the second MatMul


def _scalar(ins) -> float | None:
    if ins.op == LITERAL and np.asarray(ins.value).size == 1:
        return float(np.asarray(ins.value).reshape(()))
    return None


def _through_casts(ins):
    """``ins`` with same-type Casts before it stepped over (their input)."""
    while ins.op == "Cast" and len(ins.inputs) == 1 and ins.inputs[0].shape == ins.shape \
            and len(ins.inputs[0].users) == 1:
        ins = ins.inputs[0]
    return ins


def _unscaled(ins) -> tuple[object, float]:
    """(value, factor) for ``value * factor`` or ``value / divisor`` with a scalar literal; else
    (ins, 1)."""
    if ins.op in ("Mul", "Div") and len(ins.inputs) == 2:
        a, b = ins.inputs
        c = _scalar(b)
        if c is not None and c != 0:
            return a, (c if ins.op == "Mul" else 1.0 / c)
        c = _scalar(a)
        if ins.op == "Mul" and c is not None:
            return b, c
    return ins, 1.0


def _static(*values) -> bool:
    return all(isinstance(v.shape, Shape) and v.shape.static for v in values)


def _product(x):
    """(MatMul, scale) when ``x`` is a Q·Kᵀ product, optionally scaled, that only the chain
    reads; else None."""
    x = _through_casts(x)
    if len(x.users) != 1:
        return None
    product, scale = _unscaled(x)
    if product is not x and len(product.users) != 1:
        return None
    return (product, scale) if product.op == "MatMul" and len(product.users) == 1 else None


def _scores(softmax):
    """(Q·Kᵀ MatMul, scale, mask or None) feeding ``softmax``, or None."""
    x = _through_casts(softmax.inputs[0])
    if len(x.users) != 1:
        return None
    found = _product(x)
    if found is not None:
        return (*found, None)
    if x.op == "Add" and len(x.inputs) == 2:
        for side in (0, 1):
            found = _product(x.inputs[side])
            if found is not None:
                return (*found, x.inputs[1 - side])
    return None


def _reader(softmax):
    """The MatMul that multiplies ``softmax`` by V (same-type Casts between stepped over)."""
    x = softmax
    while len(x.users) == 1 and x.users[0].op == "Cast" and x.users[0].shape == x.shape:
        x = x.users[0]
    if len(x.users) != 1 or x.users[0].op != "MatMul" or x.users[0].inputs[0] is not x:
        return None
    return x.users[0]


def match(softmax) -> Match | None:
    """The attention ``softmax`` is the middle of, or None."""
    rank = softmax.shape.ndim if isinstance(softmax.shape, Shape) else 0
    if softmax.op != "Softmax" or rank not in (3, 4) or int(softmax.attrs.get("axis", -1)) not in (-1, rank - 1):
        return None
    output, found = _reader(softmax), _scores(softmax)
    if output is None or found is None:
        return None
    product, scale, mask = found
    v = output.inputs[1]
    (q, qf), (kt, kf) = (_unscaled(x) for x in product.inputs)
    for raw, value in ((product.inputs[0], q), (product.inputs[1], kt)):
        if raw is not value and len(raw.users) != 1:
            return None
    if not _static(q, kt, v, output, product) or not (q.shape.ndim == kt.shape.ndim == v.shape.ndim == rank):
        return None
    lead = q.shape.lens[:-2]
    if kt.shape.lens[:-2] != lead or v.shape.lens[:-2] != lead or kt.shape.lens[-2] != q.shape.lens[-1] \
            or v.shape.lens[-2] != kt.shape.lens[-1] or product.shape.lens != softmax.shape.lens:
        return None
    if mask is not None and not _mask_fits(mask, softmax.shape):
        return None
    return Match(q, kt, v, mask, scale * qf * kf, softmax, output)


def _mask_fits(mask, scores_shape) -> bool:
    if not _static(mask) or mask.shape.ndim > scores_shape.ndim or mask.shape.dtype != scores_shape.dtype:
        return False
    try:
        return tuple(np.broadcast_shapes(tuple(mask.shape.lens), tuple(scores_shape.lens))) \
            == tuple(scores_shape.lens)
    except ValueError:
        return False


def _four_d(module, value, before):
    """``value`` with leading axes of one added up to rank 4 (a view on every target)."""
    lens = tuple(value.shape.lens)
    if len(lens) == 4:
        return value
    lens = (1,) * (4 - len(lens)) + lens
    return module.add_instruction("Reshape", [value], {"shape": list(lens), "allowzero": 0},
                                  shape=Shape(value.shape.dtype, lens), before=before)


def _keys(module, kt, before):
    """K itself: the input of a Transpose that swapped its last two axes, else a new Transpose."""
    rank = kt.shape.ndim
    swap = list(range(rank - 2)) + [rank - 1, rank - 2]
    if kt.op == "Transpose" and list(kt.attrs.get("perm", [])) == swap:
        return kt.inputs[0]
    return module.add_instruction("Transpose", [kt], {"perm": swap}, before=before)


def rewrite(module, m: Match):
    """Put one ``Attention`` where ``m.output`` was; the replaced steps lose their last reader
    and dead-code elimination removes them."""
    at = m.output
    k = _keys(module, m.k_transposed, at)
    operands = [_four_d(module, x, at) for x in (m.q, k, m.v)]
    names = ["Q", "K", "V"]
    if m.mask is not None:
        operands.append(_four_d(module, m.mask, at))
        names.append("attn_mask")
    lens = tuple(operands[0].shape.lens[:3]) + (operands[2].shape.lens[3],)
    fused = module.add_instruction("Attention", operands,
                                   attention_attrs(names, m.scale),
                                   shape=Shape(at.shape.dtype, lens), before=at, name=at.name)
    result = fused
    if lens != tuple(at.shape.lens):
        result = module.add_instruction("Reshape", [fused], {"shape": list(at.shape.lens), "allowzero": 0},
                                        shape=at.shape, before=at)
    substitute(module, at, result)
    return fused


class FuseAttention:
    """The pass: every attention ``accept(match)`` approves becomes one ``Attention``."""
    name = "fuse_attention"

    def __init__(self, accept: Callable[[Match], bool]):
        self.accept = accept

    def apply(self, mpm) -> None:
        module = mpm.module
        for softmax in [i for i in module.instructions if i.op == "Softmax"]:
            found = match(softmax)
            if found is not None and self.accept(found):
                rewrite(module, found)
