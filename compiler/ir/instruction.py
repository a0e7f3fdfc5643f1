"""Instructions: one operation applied to earlier instructions' results."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from .shape import Shape, TupleShape

if TYPE_CHECKING:
    from .module import Module

# Builtins every module may hold. Everything else names an operator in the op registry or a
# structural op (run_on_target, get_tuple_elem, copy_to_device, ...).
PARAM, LITERAL, RETURN = "@param", "@literal", "@return"
BUILTINS = (PARAM, LITERAL, RETURN)

_ids = itertools.count()


class Instruction:
    """One IR node.

    ``inputs`` are instructions of the same module or of an enclosing one (If/Loop bodies read
    outer values, as ONNX subgraphs do). ``module_inputs`` are the submodules the instruction runs
    (If branches, a Loop body, a target root). ``target`` is the id of the target the
    instruction was assigned to (None until partitioning or lowering says). ``users`` is kept
    up to date by ``Module``'s editing methods: change inputs through them, not by hand.
    """

    __slots__ = ("uid", "op", "attrs", "inputs", "module_inputs", "shape", "target", "name",
                 "value", "users", "module")

    def __init__(self, op: str, inputs=(), attrs: dict | None = None, module_inputs=(),
                 shape: Shape | TupleShape | None = None, target: str | None = None,
                 name: str = "", value: np.ndarray | None = None):
        self.uid = next(_ids)
        self.op = op
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.inputs: list[Instruction] = list(inputs)
        self.module_inputs: list[Module] = list(module_inputs)
        self.shape = shape
        self.target = target
        self.name = name
        self.value = value
        self.users: list[Instruction] = []
        self.module: Module | None = None

    @property
    def is_builtin(self) -> bool:
        return self.op in BUILTINS

    def __repr__(self) -> str:
        return f"<Instruction {self.op} {self.shape}>"
