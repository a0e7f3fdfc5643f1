"""Small editing helpers the passes share (rewiring users, finding insertion points)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from compiler.ir.instruction import PARAM, Instruction


def rewire(user: Instruction, old: Instruction, new: Instruction) -> None:
    """Make ``user`` read ``new`` where it read ``old`` (users lists kept right)."""
    user.inputs = [new if i is old else i for i in user.inputs]
    if user in old.users:
        old.users = [u for u in old.users if u is not user]
    if user not in new.users:
        new.users.append(user)


def substitute(module, old: Instruction, new: Instruction) -> None:
    """Make every user of ``old`` read ``new`` instead and remove ``old`` from ``module``."""
    for user in list(old.users):
        rewire(user, old, new)
    module.remove_instruction(old)


def only_user(ins: Instruction, op: str | None = None) -> Instruction | None:
    """``ins``' one user when it has exactly one, in its own module (and of op ``op`` if given),
    else None: the link a fusion may follow without leaving a value another reader needs."""
    if len(ins.users) != 1:
        return None
    user = ins.users[0]
    if user.module is not ins.module or (op is not None and user.op != op):
        return None
    return user


def first_body_instruction(module) -> Instruction | None:
    """The first instruction that is not a parameter (where copies of parameters go)."""
    return next((i for i in module.instructions if i.op != PARAM), None)


def next_instruction(module, ins: Instruction) -> Instruction | None:
    index = module.instructions.index(ins) + 1
    return module.instructions[index] if index < len(module.instructions) else None


def all_instructions(module) -> list[Instruction]:
    """``module``'s instructions and, recursively, those of the modules they run."""
    out: list[Instruction] = []
    seen = set()

    def visit(m):
        if id(m) in seen:
            return
        seen.add(id(m))
        for ins in m.instructions:
            out.append(ins)
            for sub in ins.module_inputs:
                visit(sub)
    visit(module)
    return out


def swapped_last_axes(module, x: Instruction, before: Instruction) -> Instruction:
    """``x`` with its last two axes swapped: the input of a Transpose that swapped them, else a
    new Transpose placed ``before``."""
    rank = x.shape.ndim
    swap = list(range(rank - 2)) + [rank - 1, rank - 2]
    if x.op == "Transpose" and list(x.attrs.get("perm", [])) == swap:
        return x.inputs[0]
    return module.add_instruction("Transpose", [x], {"perm": swap}, before=before)


def replace_chain(module, last: Instruction, op: str, inputs: list, attrs: dict,
                  literals=()) -> Instruction:
    """``op`` over ``inputs`` and ``literals`` (arrays, added in ``last``'s dtype) in place of the
    chain of instructions ending at ``last``: it takes ``last``'s shape, name and readers. The
    chain's instructions are left without readers; dead code elimination removes them."""
    dtype = last.shape.dtype
    added = [module.add_literal(np.ascontiguousarray(v).astype(dtype), before=last) for v in literals]
    fused = module.add_instruction(op, [*inputs, *added], attrs, shape=last.shape, before=last,
                                   name=last.name)
    module.replace_instruction(last, fused)
    return fused


@dataclass(frozen=True)
class ChainRecognizer:
    """A pass that replaces chains of instructions, each found from one instruction of op
    ``anchor``: ``match`` (the anchor -> a tuple of what it found, or None) and ``replace`` (the
    module and what ``match`` found)."""
    name: str
    anchor: str
    match: Callable
    replace: Callable

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in [i for i in module.instructions if i.op == self.anchor]:
            found = self.match(ins) if ins.module is module else None
            if found is not None:
                self.replace(module, *found)
