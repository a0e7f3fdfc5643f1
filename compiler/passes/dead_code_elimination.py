"""Remove instructions whose results nobody reads (parameters and the return stay), and the
bodies of a removed If or Loop."""
from __future__ import annotations

from compiler.ir.instruction import PARAM, RETURN


class DeadCodeElimination:
    name = "dead_code_elimination"

    def apply(self, mpm) -> None:
        module = mpm.module
        # Walking backwards finds a whole dead chain in one sweep: users come before inputs, and
        # an instruction whose every reader is dead is dead too.
        dead: set[int] = set()
        doomed = []
        for ins in reversed(module.instructions):
            if ins.op not in (PARAM, RETURN) and all(id(u) in dead for u in ins.users):
                dead.add(id(ins))
                doomed.append(ins)
        ran_bodies = any(ins.module_inputs for ins in doomed)
        module.remove_instructions(doomed)
        if ran_bodies:  # a dead If or Loop: its bodies go with it
            mpm.program.drop_unreachable_modules()
