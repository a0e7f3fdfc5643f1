"""A simulated device target: the reference computations over values held in "device memory".

It exists so that the multi-target structure (offload copies, output buffers, boundary copies,
nesting) is *executed* and checked on machines without a GPU. Device values are wrapped in
``DeviceArray``, which refuses to be read as a host array: a missing copy fails loudly instead of
computing the right answer by accident. Register it with
``register_target("sim", make_sim_target)``; it compiles with the same ``device_passes`` as a
real device target.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ops.registry import get_op
from compiler.ops.structural import STRUCTURAL_OPS
from compiler.passes.rewrite import all_instructions
from compiler.targets.base import Target


class DeviceMemoryError(RuntimeError):
    """A value crossed between host and device memory without a copy."""


class DeviceArray:
    __slots__ = ("data", "device")

    def __init__(self, data: np.ndarray, device: str):
        self.data = data
        self.device = device

    def __array__(self, *args, **kwargs):
        raise DeviceMemoryError(f"a {self.device} device value was read on the host (missing copy)")

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype


class SimDeviceTarget(Target):
    host = False

    def __init__(self, name: str = "sim"):
        self.name = name

    def passes(self, options):
        from compiler.passes.pipelines import device_passes
        return device_passes(self.name, options)

    def lower(self, program, root, options, context):
        return SimExecutable(self, root, context)

    # ----- memory -------------------------------------------------------------------------------
    def _check(self, value) -> np.ndarray:
        if not isinstance(value, DeviceArray) or value.device != self.name:
            raise DeviceMemoryError(f"{self.name}: expected a value in {self.name} memory, got "
                                    f"{type(value).__name__}")
        return value.data

    def to_device(self, array):
        if isinstance(array, DeviceArray):
            raise DeviceMemoryError(f"{self.name}: copy_to_device of a value already on a device")
        return DeviceArray(np.array(array, copy=True), self.name)

    def from_device(self, value):
        return self._check(value).copy()

    def allocate(self, shape):
        return DeviceArray(np.empty(shape.lens, dtype=shape.dtype), self.name)

    def copy_into(self, src, dst):
        self._check(dst)[...] = self._check(src)
        return dst


class SimExecutable:
    def __init__(self, target: SimDeviceTarget, module, context):
        self.target, self.module, self.context = target, module, context
        # Literals are uploaded once, when the root is lowered.
        self.literals = {i: DeviceArray(i.value, target.name)
                         for i in all_instructions(module) if i.op == LITERAL}

    def run(self, args: Sequence[Any]) -> list:
        return self._evaluate(self.module, list(args), {})

    def _evaluate(self, module, args, outer) -> list:
        env = dict(outer)
        params = module.parameters()
        if len(args) != len(params):
            raise ValueError(f"{module.name} takes {len(params)} arguments, got {len(args)}")
        env.update(zip(params, args))
        for ins in module.instructions:
            if ins.op == PARAM:
                continue
            if ins.op == LITERAL:
                env[ins] = self.literals[ins]
            elif ins.op == RETURN:
                return [env[i] for i in ins.inputs]
            else:
                env[ins] = self._compute(ins, [env[i] for i in ins.inputs], env)
        return []

    def _compute(self, ins, values, env):
        op = get_op(ins.op)
        if ins.op == "run_on_target":
            return tuple(self.context.roots[ins.module_inputs[0].name].run(values))
        if ins.op == "get_tuple_elem":
            return values[0][ins.attrs.get("index", 0)]
        if ins.op in STRUCTURAL_OPS:
            return op.compute(ins.attrs, *values)  # they name their target's memory functions
        host = [self.target._check(v) for v in values]
        if ins.module_inputs:
            def run_module(m, margs, _env=env):
                wrapped = [DeviceArray(np.asarray(a), self.target.name) for a in margs]
                return [self.target._check(v) for v in self._evaluate(m, wrapped, _env)]
            result = op.compute_modules(ins.attrs, run_module, ins.module_inputs, *host,
                                        context=self.context)
        else:
            result = op.compute(ins.attrs, *host)
        if isinstance(result, (tuple, list)):
            return tuple(DeviceArray(np.asarray(r), self.target.name) for r in result)
        return DeviceArray(np.asarray(result), self.target.name)


def make_sim_target(name: str = "sim") -> SimDeviceTarget:
    return SimDeviceTarget(name)
