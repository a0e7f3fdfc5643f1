"""Remove instructions whose results nobody reads (parameters and the return stay)."""
from __future__ import annotations

from compiler.ir.instruction import PARAM, RETURN


class DeadCodeElimination:
    name = "dead_code_elimination"

    def apply(self, mpm) -> None:
        module = mpm.module
        # Walking backwards removes a whole dead chain in one sweep: users go before inputs.
        for ins in reversed(list(module.instructions)):
            if ins.op in (PARAM, RETURN) or ins.users:
                continue
            module.remove_instruction(ins)
