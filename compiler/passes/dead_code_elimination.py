"""Remove instructions whose results nobody reads (parameters and the return stay), and the
bodies of a removed If or Loop."""
from __future__ import annotations

from compiler.ir.instruction import PARAM, RETURN


class DeadCodeElimination:
    name = "dead_code_elimination"

    def apply(self, mpm) -> None:
        module = mpm.module
        ran_bodies = False
        # Walking backwards removes a whole dead chain in one sweep: users go before inputs.
        for ins in reversed(list(module.instructions)):
            if ins.op in (PARAM, RETURN) or ins.users:
                continue
            ran_bodies |= bool(ins.module_inputs)
            module.remove_instruction(ins)
        if ran_bodies:  # a dead If or Loop: its bodies go with it
            mpm.program.drop_unreachable_modules()
