"""A ConvTranspose with literal weights becomes convolutions, which every target runs on its
convolution paths (cuDNN's graphs on a GPU, channels-last, epilogues), where the operator's own
computation scatters one kernel tap at a time in NumPy (on a GPU: on the host, outside the CUDA
graphs).

By phase (no dilation, strides no larger than the kernel): along an axis of stride s, the
outputs o = q * s + r of phase r take the taps r, r + s, r + 2s, ... of the kernel, so each phase
is one convolution of the input itself with that sub-kernel, flipped, its input and output
channels swapped within each group. The s ** n phases' results are interleaved (a new axis after
each strided one, then one Reshape) and the pads cropped (Slice). The arithmetic is the
transposed convolution's own.

Otherwise, spread: the input with s - 1 zeros after each element along each strided axis
(``Unsqueeze``, ``Expand``ed zeros, ``Concat``, ``Reshape``), padded by (k - 1) * d - b before and
(k - 1) * d - e + o after (negative pads crop it), is correlated with the whole flipped kernel:
one convolution at s times the arithmetic along each strided axis.
"""
from __future__ import annotations

import itertools

import numpy as np

from compiler.ir.instruction import LITERAL


def _takes(ct) -> bool:
    x, w = ct.inputs[0].shape, ct.inputs[1].shape
    return (ct.inputs[1].op == LITERAL and x.static and w.static and x.ndim >= 3
            and x.dtype in ("float32", "float16", "float64", "bfloat16"))


def flipped_weights(w: np.ndarray, group: int) -> np.ndarray:
    """ConvTranspose weights (C_in, M / group, *k) as a Conv's (M, C_in / group, *k): input and
    output channels swapped within each group, every spatial axis reversed."""
    c_in, per_group, *kernel = w.shape
    grouped = w.reshape(group, c_in // group, per_group, *kernel).swapaxes(1, 2)
    flipped = grouped[(slice(None),) * 3 + (slice(None, None, -1),) * len(kernel)]
    return np.ascontiguousarray(flipped.reshape(group * per_group, c_in // group, *kernel))


def _spread_axis(module, x, axis: int, stride: int, before):
    """``x`` with ``stride`` - 1 zeros after each element along ``axis``."""
    lens = list(x.shape.lens)
    column = module.add_instruction("Unsqueeze", [x], {"axes": [axis + 1]}, before=before)
    zero = module.add_literal(np.zeros((), dtype=x.shape.dtype), before=before)
    zeros = module.add_instruction("Expand", [zero], {"shape": lens[:axis + 1] + [stride - 1] + lens[axis + 1:]},
                                   before=before)
    block = module.add_instruction("Concat", [column, zeros], {"axis": axis + 1}, before=before)
    merged = lens[:axis] + [lens[axis] * stride] + lens[axis + 1:]
    return module.add_instruction("Reshape", [block], {"shape": merged, "allowzero": 0}, before=before)


def _by_phase(ct) -> bool:
    a = ct.attrs
    return all(d == 1 for d in a["dilations"]) and all(s <= k for s, k in zip(a["strides"], a["kernel_shape"]))


def _phase_conv(module, ct, taps, lens, before):
    """One phase: the input convolved (full, stride 1) with the weights' taps ``taps`` (one
    slice a spatial axis), giving ``lens`` outputs along each axis."""
    x, w = ct.inputs[0], np.asarray(ct.inputs[1].value)
    sub = w[(slice(None), slice(None)) + tuple(taps)]
    kernel = list(sub.shape[2:])
    lit = module.add_literal(flipped_weights(sub, ct.attrs["group"]), before=before)
    nd = len(kernel)
    pads = [k - 1 for k in kernel] + [n - size for n, size in zip(lens, x.shape.lens[2:])]
    attrs = {"kernel_shape": kernel, "strides": [1] * nd, "dilations": [1] * nd, "pads": pads,
             "group": ct.attrs["group"]}
    return module.add_instruction("Conv", [x, lit, *ct.inputs[2:]], attrs, before=before)


def _interleaved(module, phases: dict, strides, before):
    """The phases (residues -> (N, M, *Q) results) as one (N, M, Q0, s0, Q1, s1, ...) tensor:
    from the last axis to the first, the results sharing the residues before an axis are stacked
    on a new axis after it."""
    nd = len(strides)
    for axis in reversed(range(nd)):
        stacked: dict = {}
        for residues in sorted(phases):
            column = module.add_instruction("Unsqueeze", [phases[residues]], {"axes": [3 + axis]}, before=before)
            stacked.setdefault(residues[:axis], []).append(column)
        phases = {key: parts[0] if len(parts) == 1 else
                  module.add_instruction("Concat", parts, {"axis": 3 + axis}, before=before)
                  for key, parts in stacked.items()}
    return phases[()]


def _rewrite_by_phase(module, ct):
    """The phases' convolutions, interleaved and cropped: the transposed convolution's value."""
    x = ct.inputs[0]
    a = ct.attrs
    strides, kernel, pads = a["strides"], a["kernel_shape"], a["pads"]
    nd = len(strides)
    spatial = x.shape.lens[2:]
    full = [(n - 1) * s + k + o for n, s, k, o in zip(spatial, strides, kernel, a["output_padding"])]
    per_phase = [-(-f // s) for f, s in zip(full, strides)]
    phases = {residues: _phase_conv(module, ct, [slice(r, None, s) for r, s in zip(residues, strides)],
                                    per_phase, before=ct)
              for residues in itertools.product(*(range(s) for s in strides))}
    woven = _interleaved(module, phases, strides, before=ct)
    lens = list(woven.shape.lens[:2]) + [q * s for q, s in zip(per_phase, strides)]
    merged = module.add_instruction("Reshape", [woven], {"shape": lens, "allowzero": 0}, before=ct)
    out = ct.shape.lens[2:]
    return module.add_instruction("Slice", [merged], {"starts": list(pads[:nd]),
                                                      "ends": [b + n for b, n in zip(pads[:nd], out)],
                                                      "axes": list(range(2, 2 + nd)), "steps": None},
                                  before=ct, name=ct.name)


def _rewrite(module, ct) -> None:
    result = _rewrite_by_phase(module, ct) if _by_phase(ct) else _rewrite_spread(module, ct)
    if result.shape == ct.shape:      # (else the transposed convolution stays; what was added is dead)
        module.replace_instruction(ct, result)


def _rewrite_spread(module, ct):
    """One convolution with the whole flipped kernel over the input spread out by the strides,
    padded (or cropped) to the transposed convolution's reach."""
    x = ct.inputs[0]
    a = ct.attrs
    nd = x.shape.ndim - 2
    kernel, strides, dilations, pads = a["kernel_shape"], a["strides"], a["dilations"], a["pads"]
    spread = x
    for i in range(nd):
        if strides[i] > 1:
            spread = _spread_axis(module, spread, 2 + i, strides[i], before=ct)
    begin, end, starts, ends = [], [], [], []
    for i in range(nd):
        reach = (kernel[i] - 1) * dilations[i]
        lo = reach - pads[i]
        # the spread input ends in stride - 1 zeros the transposed convolution never reads
        hi = reach - pads[i + nd] + a["output_padding"][i] - (strides[i] - 1)
        begin.append(max(lo, 0))
        end.append(max(hi, 0))
        starts.append(max(-lo, 0))
        ends.append(spread.shape.lens[2 + i] - max(-hi, 0))
    if any(starts) or any(e != n for e, n in zip(ends, spread.shape.lens[2:])):
        spread = module.add_instruction("Slice", [spread], {"starts": starts, "ends": ends,
                                                            "axes": list(range(2, 2 + nd)), "steps": None},
                                        before=ct)
    w = module.add_literal(flipped_weights(np.asarray(ct.inputs[1].value), a["group"]), before=ct)
    attrs = {"kernel_shape": list(kernel), "strides": [1] * nd, "dilations": list(dilations),
             "pads": begin + end, "group": a["group"]}
    return module.add_instruction("Conv", [spread, w, *ct.inputs[2:]], attrs, before=ct, name=ct.name)


class ConvTransposeAsConv:
    name = "conv_transpose_as_conv"

    def apply(self, mpm) -> None:
        module = mpm.module
        for ct in [i for i in module.instructions if i.op == "ConvTranspose"]:
            if ct.module is module and _takes(ct):
                _rewrite(module, ct)
