"""Liveness-based memory plan of a root: each value gets an offset in one arena; values whose
lifetimes do not overlap share bytes (first-fit colouring, largest first).

Views (Reshape, Transpose, Slice, ...) take no memory of their own: they extend the lifetime of
the value they look into. So do concatenations that extend an earlier one (``concat_chain``): they
are slices of the chain's buffer, which the first of them allocates as wide as the longest. The
plan's ``peak_bytes`` is the arena size: what the root needs for its intermediate values at once,
beside its weights (``literal_bytes`` on the executable).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ir.shape import Shape, TupleShape

from . import concat_chain

# Ops whose result is a view of their first input on the device.
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice",
                      "Expand", "Identity", "get_tuple_elem", "Split", "Dropout",
                      "copy_from_device", "copy"})
ALIGN = 256


def is_view(ins) -> bool:
    """Whether ``ins``'s result looks into its first input (a Gather of one literal index does)."""
    if not ins.inputs:
        return False
    if ins.op == "Gather":
        index = ins.inputs[1] if len(ins.inputs) > 1 else None
        return index is not None and index.op == LITERAL and np.ndim(index.value) == 0
    return ins.op in VIEW_OPS


@dataclass
class Plan:
    offsets: dict = field(default_factory=dict)   # instruction -> byte offset
    sizes: dict = field(default_factory=dict)
    peak_bytes: int = 0
    naive_bytes: int = 0                           # every value its own buffer


def _bytes(shape) -> int:
    if isinstance(shape, TupleShape):
        return sum(_bytes(s) for s in shape.elements)
    if isinstance(shape, Shape) and shape.static:
        return (shape.bytes() + ALIGN - 1) // ALIGN * ALIGN
    return 0


def plan(module, chains: dict | None = None, outside=()) -> Plan:
    """The plan of ``module``; ``chains`` are its concatenation chains as the lowering found them
    (found here when not given); values in ``outside`` live in buffers the caller supplies
    (``outputs_in_place``), as parameters do."""
    outside = frozenset(outside)
    order = {ins: pos for pos, ins in enumerate(module.instructions)}
    owner: dict = {}      # value -> the allocation it lives in

    def base(v):
        while v in owner:
            v = owner[v]
        return v

    if chains is None:
        chains = concat_chain.chains_of(module)
    sized: dict = {}      # a chain's first concatenation -> the bytes of its whole buffer
    start: dict = {}
    end: dict = {}
    for ins in module.instructions:
        if ins.op in (PARAM, LITERAL, RETURN) or ins in outside:
            continue
        if is_view(ins) and ins.inputs[0].module is module:
            owner[ins] = ins.inputs[0]
            continue
        chain = chains.get(ins)
        if chain is not None:
            first = chain.members[0]
            if ins is not first:
                owner[ins] = first
                continue
            sized[ins] = _bytes(Shape(chain.dtype, chain.lens))
        start[ins] = order[ins]
        end[ins] = order[ins]
    last = len(module.instructions)
    for ins in module.instructions:
        for v in ins.inputs:
            b = base(v)
            if b in end:
                end[b] = max(end[b], last if ins.op == RETURN else order[ins])
    result = Plan()
    live: list[tuple[int, int, int, int]] = []   # (start, end, offset, size)

    def size_of(v) -> int:
        return sized.get(v, _bytes(v.shape))

    for v in sorted(start, key=lambda v: (-size_of(v), start[v])):
        size = size_of(v)
        result.naive_bytes += size
        if size == 0:
            continue
        clashes = sorted((o, o + s) for a, b, o, s in live if not (b < start[v] or end[v] < a))
        offset = 0
        for lo, hi in clashes:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        live.append((start[v], end[v], offset, size))
        result.offsets[v] = offset
        result.sizes[v] = size
        result.peak_bytes = max(result.peak_bytes, offset + size)
    return result
