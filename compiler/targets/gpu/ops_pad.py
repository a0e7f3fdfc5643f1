"""Pad with pads known at lowering time, as the device's own padding.

Pad used to go through the element probe (``ops_movement.probe``): the reference run once over
element numbers, then one gather with a mask. That costs a host pass over every element at
compile time (NASNet-A Large's Pads took 7.6 of its 8.9 s compile) and a gather per run. Here a
constant pad is a fill and one copy of the input into the middle, in the input's own memory order
(a channels-last input stays channels-last); reflect and edge pads use the array library's pad.
Negative pads crop, as in the reference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels.channels_last import logical_axes, memory_axes, pixel_stride
from .lowering import lowers

MODES = ("constant", "reflect", "edge")


@dataclass(frozen=True)
class PadPlan:
    """One Pad's work: ``widths`` (before, after) of every axis, all >= 0; ``crop`` the slices
    that negative pads take off; ``mode``; ``value`` for constant pads."""
    widths: tuple
    crop: tuple
    mode: str
    value: float


def pad_plan(ins) -> PadPlan | None:
    """The plan of Pad ``ins``, or None where its pads or value come at run time or its mode is
    one this lowering does not handle."""
    attrs = ins.attrs
    mode = attrs.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if attrs.get("dynamic") or attrs.get("pads") is None or attrs.get("axes") is not None or mode not in MODES:
        return None
    pads, r = list(attrs["pads"]), ins.inputs[0].shape.ndim
    if len(pads) != 2 * r:
        return None
    widths = tuple((max(pads[k], 0), max(pads[k + r], 0)) for k in range(r))
    crop = tuple(slice(-min(pads[k], 0), None if pads[k + r] >= 0 else pads[k + r]) for k in range(r))
    value = attrs.get("value")
    value = 0 if value is None else np.asarray(value).reshape(-1)[0].item() if np.asarray(value).size else 0
    return PadPlan(widths, crop, mode, value)


def _empty_in_order_of(xp, x, lens, dtype):
    """An uninitialised array of ``lens`` stored in ``x``'s memory order: channels-last where
    ``x`` is, so that the consumers of a pad see the layout its producer wrote."""
    if pixel_stride(x) is not None and x.shape[1] > 1:
        mem = memory_axes(len(lens))
        return xp.empty(tuple(lens[a] for a in mem), dtype=dtype).transpose(logical_axes(len(lens)))
    return xp.empty(lens, dtype=dtype)


def constant_pad(xp, x, plan: PadPlan):
    """``x`` cropped, then surrounded by ``plan.value``: one fill, one copy."""
    x = x[plan.crop]
    lens = tuple(n + a + b for n, (a, b) in zip(x.shape, plan.widths))
    out = _empty_in_order_of(xp, x, lens, x.dtype)
    out.fill(x.dtype.type(plan.value))
    out[tuple(slice(a, a + n) for n, (a, _b) in zip(x.shape, plan.widths))] = x
    return out


def library_pad(xp, x, plan: PadPlan):
    """Reflect and edge pads by the array library, then the crop: a reflection reads the places
    a negative pad takes off, so the crop comes after, as in the reference."""
    return xp.pad(x, plan.widths, mode=plan.mode)[plan.crop]


@lowers("Pad")
def _pad(ins, L):
    plan = pad_plan(ins)
    if plan is None:
        return None
    xp = L.xp
    if plan.mode == "constant":
        return lambda x, *rest: constant_pad(xp, x, plan)
    return lambda x, *rest: library_pad(xp, x, plan)
