"""What convolutions and pools share: attribute defaults, auto_pad → explicit pads, output
lengths, and strided/dilated windows of a padded input."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


PER_AXIS = "one per spatial axis"
BEGIN_END = "a begin and an end per spatial axis"


def list_attr(node, name: str, length: int, default: int, minimum: int, what: str = PER_AXIS) -> list[int]:
    """An integer-list attribute of ``length`` values (``default`` each when omitted), each at
    least ``minimum``; a malformed one is named with what was expected, not left to fail later
    as an index out of range."""
    given = node.attrs.get(name)
    if not given:
        return [default] * length
    values = [int(v) for v in given]
    if len(values) != length:
        raise ValueError(f"attribute {name!r} has {len(values)} value(s) {values}; expected {length} "
                         f"({what})")
    if any(v < minimum for v in values):
        raise ValueError(f"attribute {name!r} is {values}; expected values of at least {minimum}")
    return values


def window_attrs(node, kernel: list[int], spatial_lens) -> dict:
    """strides, dilations, pads (begins then ends) with auto_pad resolved for ``spatial_lens``."""
    nd = len(kernel)
    if nd != len(spatial_lens) or any(k < 1 for k in kernel):
        raise ValueError(f"attribute 'kernel_shape' is {list(kernel)}; expected {len(spatial_lens)} "
                         f"positive value(s), {PER_AXIS} of the input")
    strides = list_attr(node, "strides", nd, 1, 1)
    dilations = list_attr(node, "dilations", nd, 1, 1)
    pads = list_attr(node, "pads", 2 * nd, 0, 0, BEGIN_END)
    a = node.attrs
    auto_pad = a.get("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if any(n is None for n in spatial_lens):
            node.unsupported("auto_pad SAME with run-time spatial lengths")
        pads = [0] * (2 * nd)
        for k in range(nd):
            out = -(-spatial_lens[k] // strides[k])
            total = max((out - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - spatial_lens[k], 0)
            small, large = total // 2, total - total // 2
            pads[k], pads[k + nd] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * nd)
    return {"kernel_shape": list(kernel), "strides": strides, "dilations": dilations, "pads": pads}


def out_len(n, k, s, d, pb, pe, ceil_mode=False):
    if n is None:
        return None
    span = (k - 1) * d + 1
    if ceil_mode:
        out = math.ceil((n + pb + pe - span) / s) + 1
        if (out - 1) * s >= n + pb:  # the last window would start in the end padding
            out -= 1
        return out
    return (n + pb + pe - span) // s + 1


def out_lens(attrs, spatial, ceil_mode=False):
    nd = len(attrs["kernel_shape"])
    p = attrs["pads"]
    return [out_len(spatial[k], attrs["kernel_shape"][k], attrs["strides"][k], attrs["dilations"][k],
                    p[k], p[k + nd], ceil_mode) for k in range(nd)]


def overhang(attrs, spatial, outs) -> list[int]:
    """Extra end padding, past the explicit pads, that ceil-mode windows (``outs`` of them along
    each axis of ``spatial``) reach; it never holds a counted element."""
    nd = len(spatial)
    k, s, d, p = attrs["kernel_shape"], attrs["strides"], attrs["dilations"], attrs["pads"]
    return [max((outs[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (spatial[i] + p[i] + p[i + nd]), 0)
            for i in range(nd)]


def windows(x: np.ndarray, attrs, fill, ceil_mode=False, overhang_fill=None) -> np.ndarray:
    """Windows of ``x`` (N, C, *spatial) padded with ``fill``: shape (N, C, *out, *kernel)."""
    nd = x.ndim - 2
    k, s, d, p = attrs["kernel_shape"], attrs["strides"], attrs["dilations"], attrs["pads"]
    outs = out_lens(attrs, x.shape[2:], ceil_mode)
    extra = overhang(attrs, x.shape[2:], outs)
    widths = [(0, 0), (0, 0)] + [(p[i], p[i + nd]) for i in range(nd)]
    xp = np.pad(x, widths, mode="constant", constant_values=fill)
    if any(extra):
        xp = np.pad(xp, [(0, 0), (0, 0)] + [(0, e) for e in extra], mode="constant",
                    constant_values=fill if overhang_fill is None else overhang_fill)
    spans = [(k[i] - 1) * d[i] + 1 for i in range(nd)]
    view = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))
    index = (slice(None), slice(None)) + tuple(slice(0, outs[i] * s[i], s[i]) for i in range(nd)) \
        + tuple(slice(None, None, d[i]) for i in range(nd))
    return view[index]
