"""Replace ``Identity`` instructions by their input."""
from __future__ import annotations

from compiler.passes.rewrite import substitute


class EliminateIdentity:
    name = "eliminate_identity"
    ops = ("Identity",)

    def apply(self, mpm) -> None:
        module = mpm.module
        for ins in list(module.instructions):
            if ins.op not in self.ops or len(ins.inputs) != 1:
                continue
            source = ins.inputs[0]
            substitute(module, ins, source)
