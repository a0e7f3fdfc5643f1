"""Recognise scaled dot-product attention spelled out in primitive ops and replace it with one
``Attention`` instruction (the ONNX op, whose reference semantics the ref target runs), so a
target can run it as one fused kernel that never writes the score matrix.

The form exporters emit (PyTorch's two exporters, tf2onnx, hand-written transformers)::

    MatMul(Q', K') -> [Mul | Div by a scalar] -> [Add mask | causal Where] -> Softmax(last axis) -> MatMul(., V)

where ``Q'`` is Q, optionally times or divided by a scalar, and ``K'`` is K transposed over its
last two axes (a ``Transpose``, or any value of that shape), optionally scaled too (PyTorch's
exporter puts the square root of the scale on both). Casts that change nothing sit between the
steps in fp16 programs and are stepped over. Every intermediate must have the chain as its only
reader, so nothing else needs the scores. A causal Where (decoders: GPT-2, Llama and their
exporters) keeps the scores where a literal lower-triangular square condition holds and puts a
fill of -1e4 or below elsewhere; it becomes ``is_causal``, as does an additive literal mask of
zeros on and below the diagonal and -1e4 or below above it. The two agree exactly where the fill
lies over 104 below a row's largest kept score (exp underflows to zero in fp32 either way).

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

from . import folded_literal
from .rewrite import substitute, swapped_last_axes


@dataclass
class Match:
    """One recognised attention: its operands, scale and the instructions it replaces."""
    q: object
    k_transposed: object          # the value of shape (..., head size, keys)
    v: object
    mask: object | None           # a value, or an array the rewrite makes a literal (folded chain)
    scale: float
    softmax: object
    output: object                # the second MatMul
    causal: bool = False

    @property
    def mask_dtype(self) -> str | None:
        if self.mask is None:
            return None
        return str(self.mask.dtype) if isinstance(self.mask, np.ndarray) else self.mask.shape.dtype


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


CAUSAL_FILL = -1e4      # a Where fill at or below this masks like causal attention's -inf


def _causal_condition(cond, scores) -> bool:
    """Whether ``cond`` is a literal lower-triangular square over the scores' last two axes, with
    axes of one before them."""
    if cond.op != LITERAL or not isinstance(scores.shape, Shape) or not scores.shape.static:
        return False
    c = np.asarray(cond.value)
    n = scores.shape.lens[-1]
    if c.dtype != np.bool_ or c.ndim < 2 or c.shape[-2:] != (n, n) or scores.shape.lens[-2] != n \
            or any(d != 1 for d in c.shape[:-2]) or c.ndim > scores.shape.ndim:
        return False
    return bool(np.array_equal(c.reshape(n, n), np.tril(np.ones((n, n), dtype=bool))))


def _causal_additive(mask, scores) -> bool:
    """Whether ``mask`` is a literal additive causal mask: square over the scores' last two axes
    (axes of one before them), zero on and below the diagonal, ``CAUSAL_FILL`` or below above
    it (Llama-style exports build it with Trilu from a constant)."""
    if mask.op != LITERAL or not isinstance(scores.shape, Shape) or not scores.shape.static:
        return False
    m = np.asarray(mask.value)
    n = scores.shape.lens[-1]
    if m.ndim < 2 or m.shape[-2:] != (n, n) or scores.shape.lens[-2] != n or m.ndim > scores.shape.ndim \
            or any(d != 1 for d in m.shape[:-2]) or m.dtype.kind != "f":
        return False
    m = m.reshape(n, n)
    below = np.tril(np.ones((n, n), dtype=bool))
    return bool((m[below] == 0).all() and (m[~below] <= CAUSAL_FILL).all())


MAX_FOLDED_MASK = 1 << 26      # elements of a folded mask, computed in float32 at compile time


def _literal_chain(end):
    """(the chain's first value, its steps in order) when ``end`` is reached from a value of its
    own lengths by Adds of a literal and Reshapes alone, each step read only by the next, with a
    Reshape among them or more than one Add (one Add alone is the plain mask below); else None.
    Swin's shifted windows: scores + position bias, split into (images, windows, ...), + the
    window mask, merged back."""
    steps, x = [], end
    while True:
        if x.op == "Reshape" and x.inputs:
            src = x.inputs[0]
        elif x.op == "Add" and len(x.inputs) == 2 and [i.op == LITERAL for i in x.inputs].count(True) == 1:
            src = x.inputs[0] if x.inputs[1].op == LITERAL else x.inputs[1]
        else:
            break
        if len(src.users) != 1 or not _static(x, src):
            break
        steps.append(x)
        x = src
    adds = sum(step.op == "Add" for step in steps)
    if adds == 0 or len(steps) < 2 or not _static(x) or tuple(x.shape.lens) != tuple(end.shape.lens):
        return None
    return x, steps[::-1]


def _folded_mask(start, steps) -> np.ndarray | None:
    """The literal that the chain adds, at the scores' lengths: the chain run on zeros, in
    float32, then axes along which it does not change cut to length one (``folded_literal``)."""
    if start.shape.elements() > MAX_FOLDED_MASK:
        return None
    return folded_literal.fold(start.shape.lens, [
        ("reshape", None, step.shape.lens) if step.op == "Reshape"
        else ("add", next(i for i in step.inputs if i.op == LITERAL).value, step.shape.lens)
        for step in steps], start.shape.dtype)


def _scores(softmax):
    """(Q·Kᵀ MatMul, scale, mask or None, causal) feeding ``softmax``, or None."""
    x = _through_casts(softmax.inputs[0])
    if len(x.users) != 1:
        return None
    found = _product(x)
    if found is not None:
        return (*found, None, False)
    chain = _literal_chain(x)
    if chain is not None:
        found = _product(chain[0])
        mask = _folded_mask(*chain) if found is not None else None
        if mask is not None:
            return (*found, mask, False)
    if x.op == "Add" and len(x.inputs) == 2:
        for side in (0, 1):
            found = _product(x.inputs[side])
            if found is not None:
                mask = x.inputs[1 - side]
                if _causal_additive(mask, x):
                    return (*found, None, True)
                return (*found, mask, False)
    if x.op == "Where" and len(x.inputs) == 3:
        cond, kept, fill = x.inputs
        value = _scalar(fill)
        found = _product(kept)
        if found is not None and value is not None and value <= CAUSAL_FILL and _causal_condition(cond, x):
            return (*found, None, True)
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
    if softmax.op != "Softmax" or rank < 3 or int(softmax.attrs.get("axis", -1)) not in (-1, rank - 1):
        return None
    output, found = _reader(softmax), _scores(softmax)
    if output is None or found is None:
        return None
    product, scale, mask, causal = found
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
    return Match(q, kt, v, mask, scale * qf * kf, softmax, output, causal)


def _mask_fits(mask, scores_shape) -> bool:
    if isinstance(mask, np.ndarray):
        lens, dtype = mask.shape, str(mask.dtype)
    elif _static(mask):
        lens, dtype = tuple(mask.shape.lens), mask.shape.dtype
    else:
        return False
    rank = scores_shape.ndim
    if len(lens) > rank or dtype != scores_shape.dtype:
        return False
    try:
        if tuple(np.broadcast_shapes(lens, tuple(scores_shape.lens))) != tuple(scores_shape.lens):
            return False
    except ValueError:
        return False
    # above rank 4 the axes before (heads, queries, keys) are merged into one batch axis: the
    # mask's must be all of length one or all the scores' own
    lead = ((1,) * (rank - len(lens)) + tuple(lens))[:rank - 3]
    return all(n == 1 for n in lead) or lead == tuple(scores_shape.lens[:rank - 3])


def _four_d(module, value, before, rank: int = 4):
    """``value`` as rank 4: leading axes of one added up to ``rank`` (the scores' rank, for a
    mask), then the axes before the last three merged into one (a view on every target when
    the merged axes are contiguous, as a mask's are and as the operands of a product are when
    their batch axes come from one tensor)."""
    lens = tuple(value.shape.lens)
    padded = (1,) * (max(rank, 4) - len(lens)) + lens
    lens4 = (int(np.prod(padded[:-3], dtype=np.int64)),) + padded[-3:]
    if lens4 == lens:
        return value
    return module.add_instruction("Reshape", [value], {"shape": list(lens4), "allowzero": 0},
                                  shape=Shape(value.shape.dtype, lens4), before=before)


def _split_heads(x):
    """A 3-D (batch·heads, sequence, size) operand as (4-D source, heads): a Reshape that merged
    the first two axes of a 4-D (batch, heads, sequence, size) value, or PyTorch's
    MultiheadAttention split, Transpose(1, 0, 2) of a Reshape of (sequence, batch, heads·size)
    into (sequence, batch·heads, size). Else None."""
    lens = tuple(x.shape.lens)
    if x.op == "Reshape" and _static(x.inputs[0]) and x.inputs[0].shape.ndim == 4:
        src = tuple(x.inputs[0].shape.lens)
        if src[0] * src[1] == lens[0] and src[2:] == lens[1:]:
            return x.inputs[0], src[1]
    if x.op == "Transpose" and list(x.attrs.get("perm", [])) == [1, 0, 2] and x.inputs[0].op == "Reshape":
        r = x.inputs[0]
        y = r.inputs[0]
        if _static(y) and y.shape.ndim == 3:
            seq, batch, hidden = y.shape.lens
            _seq, merged, size = r.shape.lens
            if _seq == seq and merged % batch == 0 and hidden == (merged // batch) * size:
                return y, merged // batch
    return None


def _four_d_heads(module, x, heads, before):
    """(batch, heads, sequence, size) from ``_split_heads``' source: the 4-D value itself, or a
    Reshape of (sequence, batch, heads·size) splitting the heads and a Transpose (views both)."""
    if x.shape.ndim == 4:
        return x
    seq, batch, hidden = x.shape.lens
    lens = (seq, batch, heads, hidden // heads)
    split = module.add_instruction("Reshape", [x], {"shape": list(lens), "allowzero": 0},
                                   shape=Shape(x.shape.dtype, lens), before=before)
    return module.add_instruction("Transpose", [split], {"perm": [1, 2, 0, 3]}, before=before)


def _operands(module, m: Match, k, at):
    """Q, K, V (and the mask) as 4-D operands. 3-D heads that were merged from a 4-D layout
    are taken apart again rather than given a leading axis of one, so the merge, which copies
    when the heads come from a packed projection, is never run."""
    split = [_split_heads(x) for x in (m.q, k, m.v)] if m.q.shape.ndim == 3 else [None]
    heads = {s[1] for s in split if s is not None}
    batch = m.q.shape.lens[0]
    mask_ok = m.mask is None or m.mask.shape.ndim < 3 or m.mask.shape.lens[0] in (1, batch)
    if None in split or len(heads) != 1 or not mask_ok:
        operands = [_four_d(module, x, at) for x in (m.q, k, m.v)]
        return operands + ([_four_d(module, m.mask, at, m.q.shape.ndim)] if m.mask is not None else [])
    (h,) = heads
    operands = [_four_d_heads(module, src, h, at) for src, _h in split]
    if m.mask is not None:
        mask = m.mask
        if mask.shape.ndim == 3 and mask.shape.lens[0] == batch and batch > 1:
            lens = (batch // h, h) + tuple(mask.shape.lens[1:])
            operands.append(module.add_instruction("Reshape", [mask], {"shape": list(lens), "allowzero": 0},
                                                   shape=Shape(mask.shape.dtype, lens), before=at))
        else:
            operands.append(_four_d(module, mask, at))
    return operands


def _grouped(x):
    """(key/value heads, their 4-D source) where ``x`` (batch, heads, seq, size) repeats each of
    fewer heads ``heads / kv`` times (Llama's repeat_kv: Unsqueeze, Expand, Reshape); else None.
    The Attention op serves grouped heads itself, so the repeat is never run."""
    if x.op != "Reshape" or x.inputs[0].op != "Expand" or not _static(x) or x.shape.ndim != 4:
        return None
    expand = x.inputs[0]
    lifted = expand.inputs[0]
    if lifted.op not in ("Unsqueeze", "Reshape") or not _static(expand, lifted, lifted.inputs[0]):
        return None
    src = lifted.inputs[0]
    b, heads, seq, size = x.shape.lens
    if src.shape.ndim != 4 or src.shape.lens[0] != b or tuple(src.shape.lens[2:]) != (seq, size):
        return None
    kv = src.shape.lens[1]
    if heads % kv or tuple(lifted.shape.lens) != (b, kv, 1, seq, size) \
            or tuple(expand.shape.lens) != (b, kv, heads // kv, seq, size):
        return None
    return kv, src


def _ungrouped(operands):
    """Q, K, V with K and V's repeated heads replaced by the heads they repeat, where both repeat
    the same number."""
    q, k, v = operands[:3]
    found = [_grouped(k), _grouped(v)]
    if None in found or found[0][0] != found[1][0]:
        return operands
    return [q, found[0][1], found[1][1]] + operands[3:]


def rewrite(module, m: Match):
    """Put one ``Attention`` where ``m.output`` was; the replaced steps lose their last reader
    and dead-code elimination removes them."""
    at = m.output
    if isinstance(m.mask, np.ndarray):
        m.mask = module.add_literal(m.mask, before=at)
    k = swapped_last_axes(module, m.k_transposed, at)
    operands = _ungrouped(_operands(module, m, k, at))
    names = ["Q", "K", "V"] + (["attn_mask"] if m.mask is not None else [])
    lens = tuple(operands[0].shape.lens[:3]) + (operands[2].shape.lens[3],)
    fused = module.add_instruction("Attention", operands,
                                   attention_attrs(names, m.scale, is_causal=int(m.causal)),
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
