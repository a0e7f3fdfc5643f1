"""Max and average pools over one or three spatial axes (audio and sequence models' 1-D pools,
video and volume models' 3-D ones) on the device: the input padded once, its windows viewed in
place (strides, no copy) and reduced over the kernel's axes. The 2-D pools have their own kernel
(``kernels/pool``); these fell to the operators' NumPy computation, on the host.

An average divides by the number of window elements that count (the input's, or the explicit
padding's too with ``count_include_pad``; never a ceil-mode overhang), worked out once when the
pool is lowered.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import TupleShape
from compiler.ops.windows import out_lens, overhang, windows

ACC = {"float16": "float32"}


def applies(ins) -> bool:
    """Whether ``ins`` (MaxPool or AveragePool) is one these runners take."""
    x = ins.inputs[0].shape
    return (not isinstance(ins.shape, TupleShape) and x.static and x.ndim in (3, 5)
            and x.dtype in ("float32", "float16", "float64"))


def _counts(attrs, spatial, include: bool) -> np.ndarray:
    """How many elements of each window an average divides by, shaped to broadcast over (N, C)."""
    ones = np.ones((1, 1, *spatial))
    nd = len(spatial)
    win = windows(ones, attrs, 1 if include else 0, bool(attrs.get("ceil_mode")), overhang_fill=0)
    return win.sum(axis=tuple(range(2 + nd, 2 + 2 * nd)))


def window_runner(ins, xp):
    """The runner of pool ``ins`` over device (or, emulating, host) arrays."""
    attrs = ins.attrs
    spatial = tuple(ins.inputs[0].shape.lens[2:])
    nd = len(spatial)
    dtype = ins.shape.dtype
    k, s, d, p = attrs["kernel_shape"], attrs["strides"], attrs["dilations"], attrs["pads"]
    outs = out_lens(attrs, spatial, bool(attrs.get("ceil_mode")))
    extra = overhang(attrs, spatial, outs)       # the ceil-mode windows' reach past the pads
    widths = [(0, 0), (0, 0)] + [(p[i], p[i + nd] + extra[i]) for i in range(nd)]
    is_max = ins.op == "MaxPool"
    fill = -np.inf if is_max else 0.0
    kernel_axes = tuple(range(2 + nd, 2 + 2 * nd))
    acc = ACC.get(dtype, dtype)
    counts = None if is_max else xp.asarray(
        _counts(attrs, spatial, bool(attrs.get("count_include_pad"))).astype(acc))

    def pool(x):
        padded = xp.pad(x, widths, mode="constant", constant_values=fill)
        st = padded.strides
        view = xp.lib.stride_tricks.as_strided(
            padded, (*padded.shape[:2], *outs, *k),
            (st[0], st[1], *[st[2 + i] * s[i] for i in range(nd)], *[st[2 + i] * d[i] for i in range(nd)]))
        if is_max:
            return view.max(axis=kernel_axes)
        return (view.sum(axis=kernel_axes, dtype=acc) / counts).astype(dtype, copy=False)
    pool.path = f"pool{nd}d-windows"
    return pool
