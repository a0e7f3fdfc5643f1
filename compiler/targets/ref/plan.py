"""A lowered module: per-instruction callables prepared once, run in order.

Lowering picks each instruction's kernel (``pick_kernel``: the reference target binds each op's
reference computation to its attributes; the cpu target picks a fast kernel where it has one)
and its inputs, so a run only calls functions; nothing is looked up or dispatched per run.
Kernels may keep scratch buffers between runs: one plan runs one call at a time.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ops.registry import get_op


class Plan:
    def __init__(self, module, context, pick_kernel: Callable):
        self.module = module
        self.params = module.parameters()
        self.literals = {i: i.value for i in module.instructions if i.op == LITERAL}
        self.steps: list[tuple[Any, Callable, list, bool]] = []
        self.returns: list = []
        for ins in module.instructions:
            if ins.op in (PARAM, LITERAL):
                continue
            if ins.op == RETURN:
                self.returns = list(ins.inputs)
                continue
            if ins.op == "run_on_target":
                fn, needs_env = call_root(ins, context), False
            elif ins.op == "get_tuple_elem":
                # Plain indexing: the element may be a device array, which must not be turned
                # into a NumPy array on the way.
                fn, needs_env = partial(_element, ins.attrs["index"]), False
            elif ins.module_inputs:
                fn, needs_env = with_bodies(ins, context, pick_kernel, Plan), True
            else:
                fn, needs_env = pick_kernel(ins), False
            self.steps.append((ins, fn, list(ins.inputs), needs_env))

    def run(self, args: Sequence[Any], outer: dict | None = None) -> list:
        if len(args) != len(self.params):
            raise ValueError(f"{self.module.name} takes {len(self.params)} arguments, got {len(args)}")
        env = dict(outer) if outer else {}
        env.update(self.literals)
        env.update(zip(self.params, args))
        for ins, fn, inputs, needs_env in self.steps:
            values = [env[i] for i in inputs]
            env[ins] = fn(env, *values) if needs_env else fn(*values)
        return [env[i] for i in self.returns]


def reference_kernel(ins) -> Callable:
    return partial(get_op(ins.op).compute, ins.attrs)


def _element(index: int, values):
    return values[index]


def call_root(ins, context) -> Callable:
    """A ``run_on_target`` call: the callee root's run on the call's arguments."""
    name = ins.module_inputs[0].name

    def call(*args):
        return tuple(context.roots[name].run(list(args)))
    return call


def with_bodies(ins, context, pick_kernel, plan_type) -> Callable:
    """If/Loop/Scan: the op drives its bodies; each body is a plan of its own (a ``plan_type``,
    the caller's plan class)."""
    op = get_op(ins.op)
    plans = {m: plan_type(m, context, pick_kernel) for m in ins.module_inputs}

    def run(env, *values):
        def run_module(m, margs):
            return plans[m].run(list(margs), env)
        return op.compute_modules(ins.attrs, run_module, ins.module_inputs, *values, context=context)
    return run
