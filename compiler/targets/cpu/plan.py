"""The cpu target's run plan: every instruction bound to its kernel once, at lowering; a run
is a loop over prepared steps that read and write a list of value slots.

Unlike the reference plan (``compiler.targets.ref.plan``), kernels here may write their results
into buffers they keep between runs (see ``kernels.common.output_buffer``). A plan therefore
hands back copies of the values it returns, so that a caller (or a Loop collecting a body's
results) never holds an array that the next run overwrites.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.targets.ref.plan import call_root, with_bodies


class CpuPlan:
    def __init__(self, module, context, pick_kernel: Callable):
        self.module = module
        self.params = module.parameters()
        own = [i for i in module.instructions if i.op != RETURN]
        self.slot = {ins: k for k, ins in enumerate(own)}
        self.param_slots = [self.slot[p] for p in self.params]
        self.initial: list[Any] = [ins.value if ins.op == LITERAL else None for ins in own]
        # Values of enclosing modules that this module or its bodies (at any depth) read:
        # fetched from the caller's plan at the start of a run, handed on to the bodies.
        self.outer = free_values(module)
        for ins in self.outer:
            self._slot_of(ins)
        self.steps: list[tuple[int, Callable, list[int], list | None]] = []
        self.returns: list[int] = []
        for ins in module.instructions:
            if ins.op == RETURN:
                self.returns = [self._slot_of(i) for i in ins.inputs]
            elif ins.op not in (PARAM, LITERAL):
                fn, needs_env = self._bind(ins, context, pick_kernel)
                reads = self._body_reads(ins) if needs_env else None
                self.steps.append((self.slot[ins], fn, [self._slot_of(i) for i in ins.inputs], reads))

    def _slot_of(self, ins) -> int:
        if ins not in self.slot:
            self.slot[ins] = len(self.initial)
            self.initial.append(None)
        return self.slot[ins]

    def _body_reads(self, ins) -> list:
        """(value, slot) of each value ``ins``'s bodies read from outside themselves, at any depth
        (this plan's own, or one of ``outer``). Only those: naming every value of the plan on each
        call took about 0.5 ms a run of the tiny Faster R-CNN fixture (two Loops, some 330 values)."""
        reads = dict.fromkeys(v for body in ins.module_inputs for v in free_values(body))
        return [(v, self.slot[v]) for v in reads]

    def _bind(self, ins, context, pick_kernel):
        if ins.op == "run_on_target":
            return call_root(ins, context), False
        if ins.op == "get_tuple_elem":
            index = ins.attrs["index"]
            return (lambda values: values[index]), False
        if ins.module_inputs:
            return with_bodies(ins, context, pick_kernel, CpuPlan), True
        return pick_kernel(ins), False

    def run(self, args: Sequence[Any], outer: dict | None = None) -> list:
        if len(args) != len(self.params):
            raise ValueError(f"{self.module.name} takes {len(self.params)} arguments, got {len(args)}")
        env = list(self.initial)
        for k, a in zip(self.param_slots, args):
            env[k] = a
        for ins in self.outer:
            env[self.slot[ins]] = outer[ins]
        for out, fn, inputs, reads in self.steps:
            if reads is not None:     # control flow: its bodies get the values they read by name
                env[out] = fn({ins: env[k] for ins, k in reads}, *[env[i] for i in inputs])
            else:
                env[out] = fn(*[env[i] for i in inputs])
        return [_owned(env[i]) for i in self.returns]


def free_values(module) -> list:
    """The values ``module``'s instructions, and its bodies' at any depth, read from outside it."""
    own = set(module.instructions)
    found = dict.fromkeys(i for ins in module.instructions for i in ins.inputs if i not in own)
    for ins in module.instructions:
        for body in ins.module_inputs:
            found.update(dict.fromkeys(v for v in free_values(body) if v not in own))
    return list(found)


def _owned(value):
    """A returned value the caller may keep: kernels' result buffers are reused by the next
    run, and a view (Reshape, Squeeze) of one would change with it."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_owned(v) for v in value)
    return value
