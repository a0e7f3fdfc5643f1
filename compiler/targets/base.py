"""What a target is: its pass list, its lowering and the executable a lowered root becomes.

A target compiles one *root module* at a time (``main`` in a single-target program, each
``run_on_target`` callee in a multi-target one). ``passes`` are run on the root by the pass
manager; ``lower`` then turns the root into a ``RootExecutable`` whose ``run`` takes the root's
parameters in order and returns its return values.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from compiler.errors import CompileError

KNOWN_TARGETS = ("ref", "cpu", "gpu")


@dataclass
class CompileOptions:
    offload_copy: bool = True
    fp16: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class RootExecutable(Protocol):
    def run(self, args: Sequence[Any]) -> list[Any]: ...


class Target:
    """Base class of targets. ``host`` says whether the target's values live in host memory
    (then no copies are needed at its roots' boundaries)."""

    name: str = ""
    host: bool = True

    def passes(self, options: CompileOptions) -> list:
        return []

    def lower(self, program, root, options: CompileOptions, context) -> RootExecutable:
        raise NotImplementedError

    def supports(self, ins) -> bool:
        """Whether this target can run ``ins`` (the partition policy asks)."""
        return True


_instances: dict[str, Target] = {}


def get_target(name: str) -> Target:
    if name not in KNOWN_TARGETS:
        raise CompileError(f"unknown target {name!r} (known: {', '.join(KNOWN_TARGETS)})")
    if name not in _instances:
        module = importlib.import_module(f"compiler.targets.{name}")
        _instances[name] = module.make_target()
    return _instances[name]
