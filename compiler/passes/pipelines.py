"""The pass lists targets build on, so every target treats roots, copies and literals alike.

A target's ``passes(options)`` returns one of these with its own passes slotted in:

    host_passes("cpu", options, extra=[FuseConvEpilogue()])
    device_passes("gpu", options, lowering=[...])   # no device is touched by any pass here
"""
from __future__ import annotations

from compiler.passes.boundary_copies import InsertBoundaryCopies
from compiler.passes.dead_code_elimination import DeadCodeElimination
from compiler.passes.eliminate_identity import EliminateIdentity
from compiler.passes.merge_index_duplicates import MergeIndexDuplicates
from compiler.passes.offload_copy import OffloadCopy
from compiler.passes.promote_literals import PromoteLiterals
from compiler.passes.propagate_constant import PropagateConstant
from compiler.passes.replace_allocate import ReplaceAllocate
from compiler.passes.simplify_reshapes import SimplifyReshapes


def simplify_passes() -> list:
    return [EliminateIdentity(), PropagateConstant(), MergeIndexDuplicates(), SimplifyReshapes(),
            DeadCodeElimination()]


def host_passes(target: str, options, extra=()) -> list:
    """A host target's root: simplify, the target's own rewrites, literals into the root,
    copies where it calls a device root that takes device memory."""
    return simplify_passes() + list(extra) + [
        DeadCodeElimination(), PromoteLiterals(),
        InsertBoundaryCopies(target, options.offload_copy), DeadCodeElimination()]


def device_passes(target: str, options, lowering=()) -> list:
    """A device target's root: as a host root, plus offload copies (on) or output parameters
    (off) for the root itself. ``lowering`` (the target's rewrites, allocations) runs first."""
    return simplify_passes() + list(lowering) + [
        DeadCodeElimination(), PromoteLiterals(),
        OffloadCopy(target, options.offload_copy),
        InsertBoundaryCopies(target, options.offload_copy),
        ReplaceAllocate(target, options.offload_copy),
        DeadCodeElimination()]


def orchestrator_passes(options) -> list:
    """``main`` of a multi-target program: it only calls roots, on the host."""
    return [InsertBoundaryCopies("ref", options.offload_copy), DeadCodeElimination()]
