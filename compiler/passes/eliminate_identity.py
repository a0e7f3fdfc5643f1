"""Replace instructions that pass their first input through unchanged by that input.

Besides ``Identity``, exporters write ops whose arguments make them identities: a ``Pad`` of
zero on every side (torchvision's Swin pads each window partition by what the size lacks, zero
at the standard sizes), a ``Cast`` to the type the value has, a ``Concat`` of one input, a
``Transpose`` that keeps the axes in order, an ``Expand`` or ``Tile`` to the shape the value has.
On the gpu target the Pad, for one, runs as a gather copy.
"""
from __future__ import annotations

from compiler.ir.shape import Shape
from compiler.passes.rewrite import substitute


def _same_shape(ins) -> bool:
    """The result has the input's type and static lengths: Expand and Tile then copy it as it is."""
    src = ins.inputs[0].shape
    return isinstance(src, Shape) and isinstance(ins.shape, Shape) and src.static and ins.shape == src


def _zero_pads(ins) -> bool:
    # every pad zero: any mode, any fill (a negative pad beside a positive one would shift)
    pads = ins.attrs.get("pads")
    return pads is not None and ins.attrs.get("axes") is None and not any(pads)


def _same_type(ins) -> bool:
    return isinstance(ins.shape, Shape) and ins.shape.dtype == ins.inputs[0].shape.dtype


def _one_input(ins) -> bool:
    return len(ins.inputs) == 1


def _axes_in_order(ins) -> bool:
    perm = ins.attrs.get("perm")
    return perm is not None and list(perm) == list(range(len(perm)))


# op -> whether this instruction of it returns its first input unchanged
PASS_THROUGH = {
    "Identity": _one_input,
    "Pad": _zero_pads,
    "Cast": _same_type,
    "CastLike": _same_type,
    "Concat": _one_input,
    "Transpose": _axes_in_order,
    "Expand": _same_shape,
    "Tile": _same_shape,
}


class EliminateIdentity:
    name = "eliminate_identity"
    ops = tuple(PASS_THROUGH)

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in list(module.instructions):
            passes_through = PASS_THROUGH.get(ins.op)
            if passes_through is None or not ins.inputs or not passes_through(ins):
                continue
            substitute(module, ins, ins.inputs[0])
