"""Copies where a call crosses memory spaces (a host module calling a device root or back).

Each module a root owns runs in its root's memory space: host for host targets, the device of a
device target. A called root's interface is host memory when its target is a host target or
offload_copy is on (the callee copies for itself), and its device's memory otherwise; then the
caller also supplies the callee's output buffers (``<callee>:#output_<i>``) with ``allocate``.

For each ``run_on_target`` whose caller and callee spaces differ, arguments are copied into the
callee's space and results (each ``get_tuple_elem``) back into the caller's. So a program whose
roots run with offload_copy off still runs when execution goes gpu → cpu → gpu.

Callees must be compiled before their callers (``compile`` does so), so that their output
parameters exist when this pass looks at the call. Run it once per root.
"""
from __future__ import annotations

from compiler.ops.structural import (ALLOCATE, COPY_FROM_DEVICE, COPY_TO_DEVICE, RUN_ON_TARGET,
                                     allocate_attrs)
from compiler.passes.offload_copy import is_output_parameter
from compiler.passes.rewrite import rewire


def memory_space(target_name: str) -> str | None:
    """None for host memory, else the device target's name."""
    from compiler.targets.base import get_target
    return None if get_target(target_name).host else target_name


def interface_space(target_name: str, offload_copy: bool) -> str | None:
    return None if offload_copy else memory_space(target_name)


class InsertBoundaryCopies:
    name = "insert_boundary_copies"

    def __init__(self, target: str, offload_copy: bool):
        self.target = target
        self.offload_copy = offload_copy

    def apply(self, mpm) -> None:
        module = mpm.module
        here = memory_space(self.target)
        self._moved: dict = {}  # (value, space) → its copy, so a value crosses once per module
        for call in [i for i in module.instructions if i.op == RUN_ON_TARGET]:
            callee = call.module_inputs[0]
            there = interface_space(call.attrs["target"], self.offload_copy)
            outputs = [p for p in callee.parameters() if is_output_parameter(p)]
            args = [self._move(module, a, here, there, call) for a in call.inputs]
            for out in outputs:
                args.append(module.add_instruction(
                    ALLOCATE, [], attrs=allocate_attrs(out.shape, there or self.target),
                    before=call))
            module.set_inputs(call, args)
            if here == there:
                continue
            for elem in [u for u in list(call.users) if u.op == "get_tuple_elem"]:
                users = list(elem.users)
                after = module.instructions[module.instructions.index(elem) + 1]
                moved = self._move(module, elem, there, here, after)
                for user in users:
                    rewire(user, elem, moved)

    def _move(self, module, value, src: str | None, dst: str | None, before):
        """``value`` (in space ``src``) as a value in space ``dst``."""
        if src == dst:
            return value
        key = (value, dst)
        if key not in self._moved:
            self._moved[key] = self._copy(module, value, src, dst, before)
        return self._moved[key]

    @staticmethod
    def _copy(module, value, src: str | None, dst: str | None, before):
        if src is not None:
            # Undo a copy we would only reverse: from_device(to_device(x)) is x.
            if value.op == COPY_TO_DEVICE and value.attrs.get("target") == src and dst is None:
                return value.inputs[0]
            value = module.add_instruction(COPY_FROM_DEVICE, [value], attrs={"target": src},
                                           before=before)
        if dst is not None:
            value = module.add_instruction(COPY_TO_DEVICE, [value], attrs={"target": dst},
                                           before=before)
        return value
