"""offload_copy off: a device root writes its results into buffers its caller supplies.

For the root it is run for, the i-th returned value becomes the output parameter
``<root>:#output_<i>``: when the value is (or is written into, following ``output_alias``) an
``allocate`` of the root, that allocation is replaced by the parameter; otherwise an output
parameter and a ``copy`` of the value into it are inserted. With offload_copy on it does nothing.
"""
from __future__ import annotations

from compiler.ops.registry import get_op
from compiler.ops.structural import ALLOCATE, COPY, RUN_ON_TARGET
from compiler.passes.offload_copy import OUTPUT_MARK, is_output_parameter


def aliased_allocation(value):
    """The ``allocate`` whose buffer holds ``value`` (through destination-passing ops and
    device-to-device root calls), or None."""
    seen = set()
    while value is not None and value.uid not in seen:
        seen.add(value.uid)
        if value.op == ALLOCATE:
            return value
        if value.op == "get_tuple_elem" and value.inputs and value.inputs[0].op == RUN_ON_TARGET:
            value = _callee_output_argument(value.inputs[0], value.attrs.get("index", 0))
            continue
        if value.is_builtin or value.op == RUN_ON_TARGET:
            return None
        try:
            alias = getattr(get_op(value.op), "output_alias", None)
        except KeyError:
            return None
        value = value.inputs[alias] if alias is not None and value.inputs else None
    return None


def _callee_output_argument(call, index: int):
    """A callee that returns its output parameter returns the caller's buffer for it."""
    callee = call.module_inputs[0]
    ret = callee.get_return()
    if ret is None or index >= len(ret.inputs):
        return None
    returned = ret.inputs[index]
    params = callee.parameters()
    if returned.op == "@param" and is_output_parameter(returned) and len(call.inputs) == len(params):
        return call.inputs[params.index(returned)]
    return None


class ReplaceAllocate:
    name = "replace_allocate"

    def __init__(self, target: str, offload_copy: bool):
        self.target = target
        self.offload_copy = offload_copy

    def apply(self, mpm) -> None:
        root = mpm.root_module
        if self.offload_copy or mpm.module is not root:
            return
        ret = root.get_return()
        if ret is None or any(is_output_parameter(p) for p in root.parameters()):
            return  # nothing returned, or done already
        outs = []
        for index, value in enumerate(ret.inputs):
            name = f"{root.name}{OUTPUT_MARK}{index}"
            alloc = aliased_allocation(value)
            if alloc is not None and alloc.module is root and alloc.shape == value.shape:
                param = root.add_parameter(name, alloc.shape)
                root.replace_instruction(alloc, param)
                root.remove_instruction(alloc)
                outs.append(param if value is alloc else value)
            else:
                param = root.add_parameter(name, value.shape)
                outs.append(root.add_instruction(COPY, [value, param], attrs={"target": self.target},
                                                 before=ret))
        root.set_inputs(ret, outs)
