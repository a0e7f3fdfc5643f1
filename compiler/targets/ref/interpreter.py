"""Evaluate a module instruction by instruction with each op's reference computation."""
from __future__ import annotations

from typing import Any, Sequence

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ops.registry import get_op


class Interpreter:
    """A root module executed by walking its instructions.

    ``context.roots`` maps root module names to their executables, so a ``run_on_target``
    instruction can call into another target's root.
    """

    def __init__(self, module, context):
        self.module = module
        self.context = context

    def run(self, args: Sequence[Any]) -> list[Any]:
        return evaluate(self.module, list(args), {}, self.context)


def evaluate(module, args: list, outer: dict, context) -> list:
    """Run ``module`` with positional ``args`` for its parameters; ``outer`` holds the values of
    enclosing modules (If/Loop bodies read them)."""
    env = dict(outer)
    params = module.parameters()
    if len(args) != len(params):
        raise ValueError(f"module {module.name} takes {len(params)} arguments, got {len(args)}")
    for p, a in zip(params, args):
        env[p] = a
    for ins in module.instructions:
        if ins.op == PARAM:
            continue
        if ins.op == LITERAL:
            env[ins] = ins.value
        elif ins.op == RETURN:
            return [env[i] for i in ins.inputs]
        else:
            values = [env[i] for i in ins.inputs]
            op = get_op(ins.op)
            if ins.module_inputs:
                def run_module(m, margs, _env=env):
                    return evaluate(m, list(margs), _env, context)
                env[ins] = op.compute_modules(ins.attrs, run_module, ins.module_inputs, *values,
                                              context=context)
            else:
                env[ins] = op.compute(ins.attrs, *values)
    return []
