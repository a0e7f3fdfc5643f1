"""Lift the literals of a root's submodules (If/Loop bodies) into the root.

A root is compiled as a self-contained program, so its constants live in it: a device target
uploads them once with the root instead of once per body. Bodies read them as outer values.
"""
from __future__ import annotations

from compiler.ir.instruction import LITERAL
from compiler.passes.rewrite import first_body_instruction, rewire


class PromoteLiterals:
    name = "promote_literals"

    def apply(self, mpm) -> None:
        module, root = mpm.module, mpm.root_module
        if module is root:
            return
        # Before the root's first non-parameter instruction: the literal must exist before any
        # instruction that runs this body executes.
        anchor = first_body_instruction(root)
        for lit in [i for i in module.instructions if i.op == LITERAL]:
            promoted = root.add_literal(lit.value, before=anchor, name=lit.name)
            for user in list(lit.users):
                rewire(user, lit, promoted)
            module.remove_instruction(lit)
