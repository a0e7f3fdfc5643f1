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

from .kernels.pointwise_flat import memory_order
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
    return PadPlan(widths, crop, mode, _fill_value(attrs.get("value")))


def _fill_value(value):
    """The constant a Pad fills with: the first element of its value, 0 where it gives none."""
    flat = np.asarray(0 if value is None else value).reshape(-1)
    return flat[0].item() if flat.size else 0


def _memory_order(x) -> tuple:
    """``x``'s axes in the order its elements lie in memory (a channels-last NCHW tensor gives
    (0, 2, 3, 1)); the logical order where that is it, or where the layout is no packed one."""
    return memory_order(x) or tuple(range(x.ndim))


def _in_order(plan: PadPlan, order) -> PadPlan:
    return PadPlan(tuple(plan.widths[a] for a in order), tuple(plan.crop[a] for a in order),
                   plan.mode, plan.value)


def _inverse(order) -> tuple:
    return tuple(int(a) for a in np.argsort(order))


def constant_pad(xp, x, plan: PadPlan):
    """``x`` cropped, then surrounded by ``plan.value``: one fill, one copy. Both work on the
    axes in ``x``'s memory order, so that neighbouring threads touch neighbouring addresses (the
    array library walks a view's axes in their logical order: a channels-last view walked as
    NCHW writes one element per pixel stride, several times slower), and the result keeps
    ``x``'s layout."""
    order = _memory_order(x)
    plan = _in_order(plan, order)
    x = x.transpose(order)[plan.crop]
    out = xp.empty(tuple(n + a + b for n, (a, b) in zip(x.shape, plan.widths)), dtype=x.dtype)
    out.fill(x.dtype.type(plan.value))
    out[tuple(slice(a, a + n) for n, (a, _b) in zip(x.shape, plan.widths))] = x
    return out.transpose(_inverse(order))


def library_pad(xp, x, plan: PadPlan):
    """Reflect and edge pads by the array library on the axes in memory order, then the crop: a
    reflection reads the places a negative pad takes off, so the crop comes after, as in the
    reference."""
    order = _memory_order(x)
    plan = _in_order(plan, order)
    return xp.pad(x.transpose(order), plan.widths, mode=plan.mode)[plan.crop].transpose(_inverse(order))


@lowers("Pad")
def _pad(ins, L):
    plan = pad_plan(ins)
    if plan is None:
        return None
    xp = L.xp
    if plan.mode == "constant":
        return lambda x, *rest: constant_pad(xp, x, plan)
    return lambda x, *rest: library_pad(xp, x, plan)
