"""Partition: assign every instruction a target and outline same-target runs into target roots.

Assignment. Each instruction gets a *target path*: ``("gpu",)`` runs in a gpu root;
``("gpu", "cpu")`` runs in a cpu root nested inside a gpu root (execution gpu → cpu → gpu). The
path comes from, in order: the user's ``assign`` keyed by instruction name, then by op type
(a value ``"gpu/cpu"`` asks for nesting), then the first target in ``targets`` whose
``supports(ins)`` says yes. An instruction that runs submodules (If, Loop) goes whole into a
root when all of its bodies' instructions have its path; otherwise it stays in the orchestrating
module and its bodies are partitioned the same way.

Outlining. In an orchestrating module (``main``, or a body of such an If/Loop) the instructions
are cut into maximal runs of consecutive instructions whose path starts with the same target;
builtins do not cut a run. Each run moves into a new root module ``<target>_root_<n>``:
parameters are the values the run (and its bodies) read from outside, in order of first read;
literals it reads are copied in as its own literals (the array is shared, not duplicated); it
returns the values used outside the run, in definition order. The run is replaced by one
``run_on_target{target}(params...)[root]`` and a ``get_tuple_elem`` per returned value. A new
root is outlined again one level deeper for instructions whose paths go further (nesting).
"""
from __future__ import annotations

from compiler.errors import CompileError
from compiler.ir.instruction import LITERAL, Instruction
from compiler.ir.shape import TupleShape
from compiler.ops.structural import RUN_ON_TARGET
from compiler.passes.rewrite import all_instructions, next_instruction, rewire

Path = tuple[str, ...]


def parse_assignment(assign: dict[str, str] | None, targets: list[str]) -> dict[str, Path]:
    """``{"Softmax": "cpu", "node_7": "gpu/cpu"}`` → key → target path, checked against
    ``targets``."""
    out: dict[str, Path] = {}
    for key, value in (assign or {}).items():
        path = tuple(t.strip() for t in str(value).split("/") if t.strip())
        if not path:
            raise CompileError(f"assignment {key}={value!r} names no target")
        for t in path:
            if t not in targets:
                raise CompileError(f"assignment {key}={value} names target {t!r}, which is not "
                                   f"among the targets ({', '.join(targets)})")
        out[key] = path
    return out


def check_assignment_keys(program, assign: dict[str, str] | None) -> None:
    """Every key names an op type or an instruction of ``program``. With one target no
    partition consults the assignment, so a misspelt key would otherwise be ignored silently."""
    import difflib

    known = {key for module in program.modules.values() for ins in module.instructions
             for key in (ins.op, ins.name) if key}
    for key, value in (assign or {}).items():
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise CompileError(f"assignment {key}={value}: no op type or node named {key!r} in "
                               f"the model{hint}")


def tuple_elem(module, tup: Instruction, index: int, before: Instruction | None) -> Instruction:
    """One element of a tuple-valued instruction (``get_tuple_elem`` is an ordinary op)."""
    return module.add_instruction("get_tuple_elem", [tup], attrs={"index": index},
                                  shape=tup.shape[index], before=before)


class Partition:
    name = "partition"

    def __init__(self, targets: list[str], assign: dict[str, str] | None = None):
        from compiler.targets.base import get_target
        self.targets = list(targets)
        self.assignment = parse_assignment(assign, self.targets)
        self._target_objects = [get_target(t) for t in self.targets]
        self.used_keys: set[str] = set()

    # ----- assignment --------------------------------------------------------------------------
    def _policy(self, ins: Instruction) -> Path:
        for key in (ins.name, ins.op):
            if key and key in self.assignment:
                self.used_keys.add(key)
                path = self.assignment[key]
                from compiler.targets.base import get_target
                for t in path:
                    if not get_target(t).supports(ins):
                        raise CompileError(f"target {t} cannot run {ins.op} "
                                           f"{ins.name!r} (assigned by {key}={'/'.join(path)})")
                return path
        for target in self._target_objects:
            if target.supports(ins):
                return (target.name,)
        raise CompileError(f"no target among {', '.join(self.targets)} can run {ins.op} "
                           f"{ins.name!r}")

    def assign_paths(self, module, paths: dict[Instruction, Path]) -> None:
        for ins in module.instructions:
            if ins.is_builtin:
                continue
            if ins.op == "get_tuple_elem" and ins.inputs[0] in paths:
                # A tuple never crosses a root boundary: its elements are read where it is made.
                paths[ins] = paths[ins.inputs[0]]
                continue
            if not ins.module_inputs:
                paths[ins] = self._policy(ins)
                continue
            for body in ins.module_inputs:
                self.assign_paths(body, paths)
            wanted = self._policy(ins)
            inner = {paths[i] for body in ins.module_inputs for i in all_instructions(body)
                     if i in paths}
            # Whole into one root only if every body instruction agrees; else orchestrate.
            paths[ins] = wanted if inner <= {wanted} else ()

    # ----- the pass ----------------------------------------------------------------------------
    def apply(self, mpm) -> None:
        if mpm.module is not mpm.root_module:
            return  # the root's walk covers its bodies: they are partitioned with their parents
        program, root = mpm.program, mpm.root_module
        # The partitioned root only orchestrates, on the host (the reference target runs it).
        program.roots.setdefault(root.name, "ref")
        paths: dict[Instruction, Path] = {}
        self.assign_paths(root, paths)
        unused = set(self.assignment) - self.used_keys
        if unused:
            raise CompileError(f"assignment key(s) {', '.join(sorted(unused))} match no op type "
                               f"or instruction name in the model")
        self._outline_module(program, root, paths, 0)

    def _outline_module(self, program, module, paths, depth: int) -> None:
        runs: list[tuple[str, list[Instruction]]] = []
        for ins in list(module.instructions):
            if ins.is_builtin:
                continue
            path = paths.get(ins, ())
            key = path[depth] if len(path) > depth else None
            if key is None:
                if depth == 0 and path == ():
                    for body in ins.module_inputs:  # orchestrated If/Loop
                        self._outline_module(program, body, paths, 0)
                runs.append(("", []))  # cuts the current run
                continue
            if runs and runs[-1][0] == key:
                runs[-1][1].append(ins)
            else:
                runs.append((key, [ins]))
        for key, members in runs:
            if members:
                new_root = outline(program, module, members, key)
                self._outline_module(program, new_root, paths, depth + 1)


def outline(program, module, members: list[Instruction], target: str):
    """Move ``members`` (consecutive instructions of ``module``) into a new root of ``target``
    and call it from where they were. Returns the new root module."""
    root = program.create_module(program.unique_module_name(f"{target}_root"))
    program.roots[root.name] = target
    readers = [i for m in members for i in all_instructions_of(m)]
    inside = set(readers)

    # Values read from outside, in order of first read (a dict keeps that order without a
    # linear search per input).
    outside = list(dict.fromkeys(i for r in readers for i in r.inputs if i not in inside))
    # Values used outside, in definition order.
    returned = [m for m in members if any(u not in inside for u in m.users)]
    anchor = next_instruction(module, members[-1])

    # Build the root: parameters, literals, then the moved instructions and the return.
    replacement: dict[Instruction, Instruction] = {}
    args: list[Instruction] = []
    for value in outside:
        if value.op == LITERAL:
            replacement[value] = root.add_literal(value.value, name=value.name)
        else:
            replacement[value] = root.add_parameter(f"p{len(args)}", value.shape)
            args.append(value)
    for r in readers:
        for value in set(r.inputs) & replacement.keys():
            rewire(r, value, replacement[value])
    for m in members:
        module.instructions.remove(m)
        root.instructions.append(m)
        m.module = root
        m.target = target

    call = module.add_instruction(RUN_ON_TARGET, args, attrs={"target": target},
                                  module_inputs=[root], before=anchor,
                                  shape=TupleShape(tuple(v.shape for v in returned)))
    for index, value in enumerate(returned):
        elem = tuple_elem(module, call, index, before=anchor)
        for user in [u for u in value.users if u not in inside]:
            rewire(user, value, elem)
    root.add_return(returned)
    return root


def all_instructions_of(ins: Instruction) -> list[Instruction]:
    """``ins`` and every instruction of the modules it runs (recursively)."""
    out = [ins]
    for body in ins.module_inputs:
        out += all_instructions(body)
    return out


def root_call_order(program) -> list[str]:
    """Root module names, callees before callers, ``main``'s own root last."""
    order: list[str] = []

    def visit(module, seen):
        for ins in module.instructions:
            for sub in ins.module_inputs:
                if sub.name in seen:
                    continue
                seen.add(sub.name)
                visit(sub, seen)
                if sub.name in program.roots and sub.name not in order:
                    order.append(sub.name)
    visit(program.main, {"main"})
    for name in program.roots:
        if name not in order and name != "main":
            order.append(name)
    return order + ["main"]

