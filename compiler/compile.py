"""``Program.compile``: partition into target roots, run each root's passes, lower each root.

Single target: ``main`` is the root of that target. Several targets: ``main`` is simplified,
then partitioned (``compiler.passes.partition``); it becomes the host orchestrator (compiled by
the ``ref`` target) that calls one root per run of same-target instructions. Roots are compiled
callees first, so a caller sees its callees' final parameters (output buffers with offload_copy
off). ``prepare_program`` stops before lowering: it touches no device, so the structure of a
gpu program can be built and checked anywhere.
"""
from __future__ import annotations

from compiler.errors import CompileError
from compiler.ops.registry import quiet_ieee
from compiler.execute import Executable, ExecutionContext
from compiler.passes.partition import (Partition, check_assignment_keys, parse_assignment,
                                       root_call_order)
from compiler.passes.pass_manager import run_passes
from compiler.passes.pipelines import orchestrator_passes, simplify_passes
from compiler.targets.base import CompileOptions, get_target

ORCHESTRATOR = "ref"


def normalise_targets(targets) -> list[str]:
    names = [targets] if isinstance(targets, str) else list(targets)
    names = [t.strip() for n in names for t in n.split(",") if t.strip()]
    if not names:
        raise CompileError("no target given")
    for n in names:
        get_target(n)  # raises a clear error for unknown names
    if len(set(names)) != len(names):
        raise CompileError(f"target listed twice: {', '.join(names)}")
    return names


def prepare_program(program, targets="ref", offload_copy: bool = True,
                    assign: dict[str, str] | None = None, fp16: bool = False, **extra):
    """Partition ``program`` and run every root's passes, without lowering. Returns it."""
    names = normalise_targets(targets)
    options = CompileOptions(offload_copy=offload_copy, fp16=fp16, extra=extra)
    _prepare(program, names, options, assign)
    return program


def _prepare(program, names: list[str], options: CompileOptions, assign) -> None:
    if program.compiled is not None or program.options:
        raise CompileError("program is already compiled")
    program.options = {"targets": names, "offload_copy": options.offload_copy,
                       "fp16": options.fp16, "assign": dict(assign or {})}
    check_assignment_keys(program, assign)  # before simplification removes anything
    if len(names) == 1:
        parse_assignment(assign, names)  # a bad --assign is an error even with one target
        program.roots = {"main": names[0]}
        run_passes(program, program.main, get_target(names[0]).passes(options))
        return
    program.roots = {"main": ORCHESTRATOR}
    run_passes(program, program.main, simplify_passes())
    run_passes(program, program.main, [Partition(names, assign)])
    for name in root_call_order(program):
        target = get_target(program.roots[name])
        passes = target.passes(options) if name != "main" else orchestrator_passes(options)
        run_passes(program, program.modules[name], passes)


def compile_program(program, targets="ref", offload_copy: bool = True, fp16: bool = False,
                    assign: dict[str, str] | None = None, **extra) -> None:
    names = normalise_targets(targets)
    options = CompileOptions(offload_copy=offload_copy, fp16=fp16, extra=extra)
    _prepare(program, names, options, assign)
    program.validate()
    context = ExecutionContext(program)
    with quiet_ieee():  # lowering computes constant instructions too
        for name in root_call_order(program):
            target = get_target(program.roots[name])
            context.roots[name] = target.lower(program, program.modules[name], options, context)
    program.compiled = Executable(program, context, options)
