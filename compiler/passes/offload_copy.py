"""offload_copy on: a device root takes and returns host data.

For the root it is run for (``mpm.root_module``), each *used* parameter gets one
``copy_to_device`` right after the parameters, and each returned value one ``copy_from_device``
right before ``@return``. Output parameters (``#output_``) are device buffers and get none. A root
of a host target needs no copies, so targets list this pass only for device roots; it checks
anyway. Off, the pass does nothing (``replace_allocate`` makes output parameters instead).
"""
from __future__ import annotations

from compiler.ops.structural import COPY_FROM_DEVICE, COPY_TO_DEVICE
from compiler.passes.rewrite import first_body_instruction, rewire

OUTPUT_MARK = ":#output_"


def is_output_parameter(ins) -> bool:
    return OUTPUT_MARK in ins.name


class OffloadCopy:
    name = "offload_copy"

    def __init__(self, target: str, enabled: bool = True):
        self.target = target
        self.enabled = enabled

    def apply(self, mpm) -> None:
        from compiler.targets.base import get_target
        root = mpm.root_module
        if not self.enabled or mpm.module is not root or get_target(self.target).host:
            return
        attrs = {"target": self.target}
        anchor = first_body_instruction(root)
        for param in root.parameters():
            users = list(param.users)
            if not users or is_output_parameter(param) or all(u.op == COPY_TO_DEVICE for u in users):
                continue
            copy = root.add_instruction(COPY_TO_DEVICE, [param], attrs=attrs, before=anchor)
            for user in users:
                rewire(user, param, copy)
        ret = root.get_return()
        if ret is None:
            return
        outs = []
        for value in ret.inputs:
            if value.op == COPY_FROM_DEVICE:
                outs.append(value)
            else:
                outs.append(root.add_instruction(COPY_FROM_DEVICE, [value], attrs=attrs, before=ret))
        root.set_inputs(ret, outs)
