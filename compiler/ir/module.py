"""Modules: an ordered list of instructions with parameters, literals and one return."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .instruction import LITERAL, PARAM, RETURN, Instruction
from .shape import Shape, TupleShape


class Module:
    """An ordered instruction list. Order is a valid topological order at all times."""

    def __init__(self, name: str):
        self.name = name
        self.instructions: list[Instruction] = []

    # ----- building ---------------------------------------------------------------------------
    def _place(self, ins: Instruction, before: Instruction | None, index: int | None = None) -> Instruction:
        ins.module = self
        if before is not None:
            index = self.instructions.index(before)
        elif index is None:
            # @return stays last (nothing is placed after it), so appending goes just before it;
            # looking at the last instruction only keeps building a module linear in its size
            last = self.instructions[-1] if self.instructions else None
            index = len(self.instructions) - (1 if last is not None and last.op == RETURN else 0)
        self.instructions.insert(index, ins)
        for i in ins.inputs:
            i.users.append(ins)
        return ins

    def add_parameter(self, name: str, shape: Shape, before: Instruction | None = None) -> Instruction:
        """Add a parameter; without ``before`` it goes after the existing parameters, so the
        module's signature keeps the order in which parameters were added."""
        if any(p.name == name for p in self.parameters()):
            raise ValueError(f"module {self.name!r} already has a parameter {name!r}")
        params = self.parameters()
        index = self.instructions.index(params[-1]) + 1 if params else 0
        return self._place(Instruction(PARAM, shape=shape, name=name), before, index)

    def add_literal(self, value, before: Instruction | None = None, name: str = "") -> Instruction:
        value = np.asarray(value)
        return self._place(Instruction(LITERAL, shape=Shape.of(value), value=value, name=name), before)

    def add_instruction(self, op: str, inputs: Sequence[Instruction] = (), attrs: dict | None = None,
                        module_inputs: Sequence["Module"] = (), shape=None,
                        before: Instruction | None = None, name: str = "",
                        target: str | None = None) -> Instruction:
        """Append (or insert ``before``) an instruction; its shape comes from the op's rule
        unless given."""
        if shape is None:
            from compiler.ops.registry import compute_shape
            shape = compute_shape(op, attrs or {}, list(inputs), list(module_inputs))
        ins = Instruction(op, inputs, attrs, module_inputs, shape=shape, name=name, target=target)
        return self._place(ins, before)

    def add_return(self, inputs: Sequence[Instruction]) -> Instruction:
        if self.get_return() is not None:
            raise ValueError(f"module {self.name!r} already returns")
        shapes = tuple(i.shape for i in inputs)
        return self._place(Instruction(RETURN, inputs, shape=TupleShape(shapes)), None)

    # ----- editing ----------------------------------------------------------------------------
    def replace_instruction(self, old: Instruction, new: Instruction) -> None:
        """Make every user of ``old`` read ``new`` instead (``old`` stays until DCE removes it)."""
        for user in list(old.users):
            if user is new:
                continue
            user.inputs = [new if i is old else i for i in user.inputs]
            new.users.append(user)
        old.users = [u for u in old.users if u is new]

    def set_inputs(self, ins: Instruction, inputs: Sequence[Instruction]) -> None:
        for i in ins.inputs:
            if ins in i.users:
                i.users.remove(ins)
        ins.inputs = list(inputs)
        for i in ins.inputs:
            i.users.append(ins)

    def remove_instructions(self, doomed: Sequence[Instruction]) -> None:
        """Remove several instructions in one pass over the module, each read by none but
        others among them (dead code: one removal at a time would scan the list each time)."""
        ids = {id(i) for i in doomed}
        if any(id(u) not in ids for ins in doomed for u in ins.users):
            raise ValueError("cannot remove instructions that others still read")
        for ins in doomed:
            for i in ins.inputs:
                if id(i) not in ids and ins in i.users:
                    i.users.remove(ins)
            ins.module = None
        self.instructions = [i for i in self.instructions if id(i) not in ids]

    def remove_instruction(self, ins: Instruction) -> None:
        if ins.users:
            raise ValueError(f"cannot remove {ins.op}: it still has users")
        for i in ins.inputs:
            if ins in i.users:
                i.users.remove(ins)
        self.instructions.remove(ins)
        ins.module = None

    # ----- queries ----------------------------------------------------------------------------
    def parameters(self) -> list[Instruction]:
        return [i for i in self.instructions if i.op == PARAM]

    def parameter_names(self) -> list[str]:
        return [p.name for p in self.parameters()]

    def literals(self) -> list[Instruction]:
        return [i for i in self.instructions if i.op == LITERAL]

    def get_return(self) -> Instruction | None:
        return next((i for i in reversed(self.instructions) if i.op == RETURN), None)

    def output_shapes(self) -> list:
        ret = self.get_return()
        return [] if ret is None else [i.shape for i in ret.inputs]

    def submodules(self) -> list["Module"]:
        """Modules this module's instructions run, directly."""
        seen: list[Module] = []
        for ins in self.instructions:
            for m in ins.module_inputs:
                if m not in seen:
                    seen.append(m)
        return seen

    def __iter__(self):
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __str__(self) -> str:
        from .printer import print_module
        return print_module(self)
