"""Run a target's passes over one root module and the submodules it owns.

Passes are small objects with a ``name`` and an ``apply(mpm)`` method. The manager visits the
root's submodules children first (a body is simplified before its parent looks at it) and then
the root itself; a pass learns which root it is working for from ``mpm.root_module`` and never
compares a module's name with "main".
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModulePassManager:
    program: object
    module: object       # the module a pass is applied to now
    root_module: object  # the target root that owns it

    def create_module(self, name: str):
        return self.program.create_module(name)


def owned_modules(program, root) -> list:
    """Modules run by ``root`` that belong to it (not other target roots), children first."""
    order: list = []

    def visit(m):
        for sub in m.submodules():
            if sub.name in program.roots or sub in order:
                continue
            visit(sub)
            order.append(sub)

    visit(root)
    return order


def run_passes(program, root, passes) -> None:
    from compiler.ops.registry import quiet_ieee
    with quiet_ieee():  # passes fold constants: IEEE specials there are results, not errors
        for p in passes:
            for module in owned_modules(program, root) + [root]:
                p.apply(ModulePassManager(program, module, root))
