"""A zero Pad read only by a convolution becomes that convolution's own padding.

Exporters write a convolution's padding as a Pad before it where the framework pads apart from the
convolution: tf2onnx for TensorFlow's SAME padding of strided convolutions, timm's and others'
``F.pad`` for "same" padding. The Pad copies the whole input into a larger buffer; folded, the
convolution reads its input in place and treats the pads as zeros, as it does its own.

Only a constant Pad of zeros with static, non-negative pads on the spatial axes alone folds, into
a plain Conv (explicit pads) that reads it as its input; the Pad, then read by nothing, goes with
dead code elimination. A Pad with another reader, another mode, another value or pads on the
batch or channel axis is left alone.
"""
from __future__ import annotations

import numpy as np

from .rewrite import only_user, rewire


def _spatial_pads(pad) -> list | None:
    """The begin-then-end pads of ``pad``'s spatial axes when it is a constant Pad of zeros with
    static, non-negative pads on those axes only; else None."""
    a = pad.attrs
    if pad.op != "Pad" or len(pad.inputs) != 1 or a.get("dynamic") or a.get("axes") is not None:
        return None
    value = a.get("value")
    if a.get("mode", "constant") != "constant" or a.get("pads") is None \
            or (value is not None and np.any(np.asarray(value) != 0)):
        return None
    pads, rank = [int(p) for p in a["pads"]], pad.shape.ndim
    begin, end = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads) or begin[:2] != [0, 0] or end[:2] != [0, 0]:
        return None
    return begin[2:] + end[2:]


def foldable(conv):
    """(the Pad, its spatial pads) that ``conv`` can take as its own padding, else None."""
    pad = conv.inputs[0]
    extra = _spatial_pads(pad)
    if extra is None or only_user(pad) is not conv:
        return None
    return pad, extra


class FoldPadIntoConv:
    name = "fold_pad_into_conv"

    def apply(self, mpm) -> None:
        module = mpm.module
        for conv in [i for i in module.instructions if i.op == "Conv" and i.module is module]:
            found = foldable(conv)
            if found is None:
                continue
            pad, extra = found
            # The convolution's output is the same: it reads the Pad's input and pads it itself.
            conv.attrs = dict(conv.attrs, pads=[p + e for p, e in zip(conv.attrs["pads"], extra)])
            rewire(conv, pad, pad.inputs[0])
