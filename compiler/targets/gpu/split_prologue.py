"""A fused pointwise result read only by a split-bf16 convolution is never written in fp32: the
pointwise step hands on its inputs (``DeferredPointwise``) and the convolution's split computes
the body and writes the split rows in one kernel (``kernels/pointwise_split``). That is DenseNet's
pre-activation (batch norm + ReLU of the concatenated features before each convolution).

Runs over a lowered module's steps once they are all lowered, since only then is each
convolution's path known (an fp32 convolution times its paths while it is lowered).
"""
from __future__ import annotations

from collections import Counter

from .kernels import pointwise_split
from .pointwise_codegen import UnsupportedPointwise


class DeferredPointwise:
    """A pointwise step's inputs, computed where they are consumed."""

    def __init__(self, step, source: str, args):
        self.step, self.source, self.args = step, source, args

    def value(self):
        """The step's result, as the step would have returned it."""
        return self.step(*self.args)

    def split(self, lo: int):
        """The result split along its channels (rows of pixels), or None when an operand is not
        laid out as the fused kernel reads it."""
        return pointwise_split.run(self.source, self.args, self.step.out_lens, lo)


def _split_source(fn) -> str | None:
    """The fused kernel's source for pointwise step ``fn``, or None when it cannot defer (not a
    rank-4 fp32 body)."""
    body = getattr(fn, "pointwise_body", None)
    if body is None or len(fn.out_lens) != 4 or any(d != "float32" for d in fn.in_dtypes):
        return None
    try:
        return pointwise_split.source(body, len(fn.in_dtypes))
    except UnsupportedPointwise:
        return None


def _deferring(fn, source: str):
    def defer(*args):
        return DeferredPointwise(fn, source, args)
    defer.capturable = getattr(fn, "capturable", True)
    defer.path = "pointwise-deferred"
    return defer


def defer_split_producers(steps: list, returned) -> int:
    """Rewrite ``steps`` (the lowered module's (ins, fn, inputs, dead) list) in place: each fused
    pointwise step whose only reader is a convolution taking its input through ``split_of``
    defers to it. Returns how many steps defer."""
    readers = Counter(v for _ins, _fn, inputs, _dead in steps for v in inputs)
    position = {ins: k for k, (ins, _fn, _inputs, _dead) in enumerate(steps)}
    deferred = 0
    for ins, fn, inputs, _dead in steps:
        if getattr(fn, "split_of", None) is None or not inputs:
            continue
        source = inputs[0]
        k = position.get(source)
        if k is None or readers[source] != 1 or source in returned:
            continue
        p_ins, p_fn, p_inputs, p_dead = steps[k]
        text = _split_source(p_fn)
        if text is None:
            continue
        steps[k] = (p_ins, _deferring(p_fn, text), p_inputs, p_dead)
        deferred += 1
    return deferred
