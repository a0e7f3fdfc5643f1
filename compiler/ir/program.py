"""Programs: named modules, ``main`` first."""
from __future__ import annotations

from typing import Iterator

from .instruction import Instruction
from .module import Module
from .printer import print_module


class ValidationError(Exception):
    pass


class Program:
    """A whole model: ``main`` plus every submodule (If/Loop bodies, target roots).

    ``roots`` maps the name of each target root module to its target id; ``main`` is a root
    too (of the program's single target, or of the host orchestrator in a multi-target
    program). ``compile`` fills in ``roots`` and the executables; ``run`` executes ``main``.
    """

    def __init__(self):
        self.modules: dict[str, Module] = {}
        self.roots: dict[str, str] = {}
        self.create_module("main")
        self.compiled = None  # set by compile(): a compiler.execute.Executable
        self.options: dict = {}
        self.name = ""  # the model's name, for messages
        self.output_names: list[str] = []  # names of main's results (ONNX graph outputs)

    # ----- modules ----------------------------------------------------------------------------
    @property
    def main(self) -> Module:
        return self.modules["main"]

    def create_module(self, name: str) -> Module:
        if name in self.modules:
            raise ValueError(f"program already has a module {name!r}")
        module = Module(name)
        self.modules[name] = module
        return module

    def drop_unreachable_modules(self) -> None:
        """Remove modules no instruction runs any more (the bodies of an If or Loop that dead
        code elimination removed), keeping ``main``, the target roots and what they run. A body
        left behind would still name values of a parent that no longer runs it."""
        reachable: set[str] = set()
        stack = [m for name, m in self.modules.items() if name == "main" or name in self.roots]
        while stack:
            module = stack.pop()
            if module.name in reachable:
                continue
            reachable.add(module.name)
            stack.extend(module.submodules())
        for name in [n for n in self.modules if n not in reachable]:
            del self.modules[name]

    def unique_module_name(self, stem: str) -> str:
        n = 0
        while f"{stem}_{n}" in self.modules:
            n += 1
        return f"{stem}_{n}"

    def __iter__(self) -> Iterator[Module]:
        return iter(self.modules.values())

    # ----- checks -----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValidationError`` naming the first dangling reference found.

        An input must be defined earlier in the same module or in a module that (transitively)
        runs this one; every module input must belong to the program; a module returns once.
        """
        parents: dict[Module, set[Module]] = {m: set() for m in self.modules.values()}
        for m in self.modules.values():
            for sub in m.submodules():
                if sub not in parents:
                    raise ValidationError(f"module {m.name!r} runs a module {sub.name!r} that is not in the program")
                parents[sub].add(m)

        def ancestors(m: Module) -> set[Module]:
            out, stack = set(), list(parents[m])
            while stack:
                p = stack.pop()
                if p not in out:
                    out.add(p)
                    stack.extend(parents[p])
            return out

        for m in self.modules.values():
            defined: set[Instruction] = set()
            visible = ancestors(m)
            returns = 0
            for ins in m.instructions:
                if ins.module is not m:
                    raise ValidationError(f"{m.name}: {ins.op} does not record its module")
                for i in ins.inputs:
                    if i in defined:
                        continue
                    if i.module in visible and i.module is not m:
                        continue
                    raise ValidationError(
                        f"{m.name}: {ins.op} reads a value ({i.op} {i.shape}) that is not defined before it")
                defined.add(ins)
                returns += ins.op == "@return"
            if returns > 1:
                raise ValidationError(f"{m.name}: more than one @return")

    # ----- compile and run (compiler.compile / compiler.execute do the work) -------------------
    def compile(self, targets="ref", offload_copy: bool = True, fp16: bool = False,
                assign: dict[str, str] | None = None, **options) -> "Program":
        from compiler.compile import compile_program
        compile_program(self, targets, offload_copy=offload_copy, fp16=fp16, assign=assign, **options)
        return self

    def run(self, feeds: dict) -> list:
        if self.compiled is None:
            raise RuntimeError("compile() the program before run()")
        return self.compiled.run(feeds)

    # ----- text -------------------------------------------------------------------------------
    def to_text(self, full: bool = False) -> str:
        blocks = []
        for m in self.modules.values():
            tag = f" (root, target {self.roots[m.name]})" if m.name in self.roots else ""
            blocks.append(print_module(m, full, header=f"module {m.name}{tag}:"))
        return "\n\n".join(blocks) + "\n"

    def __str__(self) -> str:
        return self.to_text()
