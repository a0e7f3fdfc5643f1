"""``Program.compile``: partition into target roots, run each root's passes, lower each root."""
from __future__ import annotations

from compiler.errors import CompileError
from compiler.execute import Executable, ExecutionContext
from compiler.passes.pass_manager import run_passes
from compiler.targets.base import CompileOptions, get_target


def _normalise_targets(targets) -> list[str]:
    names = [targets] if isinstance(targets, str) else list(targets)
    names = [t.strip() for n in names for t in n.split(",") if t.strip()]
    if not names:
        raise CompileError("no target given")
    for n in names:
        get_target(n)  # raises a clear error for unknown names
    return names


def compile_program(program, targets="ref", offload_copy: bool = True, fp16: bool = False,
                    assign: dict[str, str] | None = None, **extra) -> None:
    names = _normalise_targets(targets)
    options = CompileOptions(offload_copy=offload_copy, fp16=fp16, extra=extra)
    if program.compiled is not None:
        raise CompileError("program is already compiled")
    if len(names) == 1 and not assign:
        program.roots = {"main": names[0]}
    else:
        raise CompileError("multi-target compilation is not available yet")
    context = ExecutionContext(program)
    for name, target_name in program.roots.items():
        target = get_target(target_name)
        root = program.modules[name]
        run_passes(program, root, target.passes(options))
        context.roots[name] = target.lower(program, root, options, context)
    program.validate()
    program.compiled = Executable(program, context)
