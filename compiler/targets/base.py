"""What a target is: its pass list, its lowering and the executable a lowered root becomes.

A target compiles one *root module* at a time (``main`` in a single-target program, each
``run_on_target`` callee in a multi-target one). ``passes`` are run on the root by the pass
manager; ``lower`` then turns the root into a ``RootExecutable`` whose ``run`` takes the root's
parameters in order and returns its return values.

``passes`` must not touch a device: the structure of a program (partition, copies, output
parameters) is built and tested on machines without one. Device work starts in ``lower`` or at
the first ``run``.

A target that is not ``host`` keeps values in its own memory; the structural ops
(``copy_to_device``, ``copy_from_device``, ``allocate``, ``copy``) call its memory functions.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

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

    # ----- memory (host targets: host arrays are the target's arrays) -------------------------
    def to_device(self, array):
        return np.asarray(array)

    def from_device(self, value):
        return np.asarray(value)

    def allocate(self, shape):
        return np.empty(shape.lens, dtype=shape.dtype)

    def copy_into(self, src, dst):
        np.copyto(dst, src)
        return dst


_instances: dict[str, Target] = {}
_factories: dict[str, Callable[[], Target]] = {}


def register_target(name: str, factory: Callable[[], Target]) -> None:
    """Make ``get_target(name)`` build a target with ``factory`` (extra or test targets)."""
    _factories[name] = factory
    _instances.pop(name, None)


def target_names() -> list[str]:
    return list(KNOWN_TARGETS) + [n for n in _factories if n not in KNOWN_TARGETS]


def get_target(name: str) -> Target:
    if name in _instances:
        return _instances[name]
    if name in _factories:
        _instances[name] = _factories[name]()
    elif name in KNOWN_TARGETS:
        module = importlib.import_module(f"compiler.targets.{name}")
        _instances[name] = module.make_target()
    else:
        raise CompileError(f"unknown target {name!r} (known: {', '.join(target_names())})")
    return _instances[name]
