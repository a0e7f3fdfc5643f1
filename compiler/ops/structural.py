"""Structural operators: calls into target roots, copies between memory spaces, buffers.

They carry no maths. Their reference computations run on the host and ask the named target for
its memory functions (``Target.to_device`` / ``from_device`` / ``allocate``), so a host
orchestrator (``main`` of a multi-target program) can move data for a device root it calls.

``output_alias`` on an op definition names the input an instruction writes its result into
(destination-passing style): ``copy(src, dst)`` returns ``dst``. ``replace_allocate`` follows these
aliases to find the allocation behind a returned value.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape, TupleShape
from compiler.ops.registry import Op, register_op

RUN_ON_TARGET = "run_on_target"
COPY_TO_DEVICE = "copy_to_device"
COPY_FROM_DEVICE = "copy_from_device"
ALLOCATE = "allocate"
COPY = "copy"
STRUCTURAL_OPS = (RUN_ON_TARGET, COPY_TO_DEVICE, COPY_FROM_DEVICE, ALLOCATE, COPY)


def device_values(cls):
    """Keep this op's results as they are: they may be device arrays, which the registry's
    conversion of compute results to NumPy arrays would copy to the host or reject."""
    for method in ("compute", "compute_modules"):
        fn = cls.__dict__.get(method)
        if fn is not None and hasattr(fn, "__wrapped__"):
            setattr(cls, method, fn.__wrapped__)
    return cls


def _target(attrs):
    from compiler.targets.base import get_target
    return get_target(attrs["target"])


@register_op
@device_values
class RunOnTarget(Op):
    """``run_on_target{target}(args...)[root]``: call a target root; returns a tuple of its
    return values. The callee's executable is found in the run-time context by module name."""

    name = RUN_ON_TARGET

    def shape(self, attrs, inputs, literals, module_inputs=()):
        if len(module_inputs) != 1:
            raise ValueError("run_on_target calls exactly one root module")
        return TupleShape(tuple(module_inputs[0].output_shapes()))

    def compute_modules(self, attrs, run_module, modules, *args, context=None):
        root = modules[0]
        if context is not None and root.name in context.roots:
            return tuple(context.roots[root.name].run(list(args)))
        # Not lowered (structure-only programs): evaluate the root in place.
        return tuple(run_module(root, args))


@register_op
@device_values
class CopyToDevice(Op):
    """Copy a host value into the memory of ``target``."""

    name = COPY_TO_DEVICE

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        return _target(attrs).to_device(x)


@register_op
@device_values
class CopyFromDevice(Op):
    """Copy a value in the memory of ``target`` back to the host."""

    name = COPY_FROM_DEVICE

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        return _target(attrs).from_device(x)


@register_op
@device_values
class Allocate(Op):
    """A fresh buffer in the memory of ``target``; attrs ``dtype`` and ``lens`` give its shape."""

    name = ALLOCATE

    def shape(self, attrs, inputs, literals):
        return Shape(attrs["dtype"], tuple(attrs["lens"]))

    def compute(self, attrs):
        return _target(attrs).allocate(Shape(attrs["dtype"], tuple(attrs["lens"])))


@register_op
@device_values
class Copy(Op):
    """``copy(src, dst)``: write ``src`` into the buffer ``dst`` (same memory space); returns
    ``dst``. Used to fill caller-supplied output parameters."""

    name = COPY
    output_alias = -1

    def shape(self, attrs, inputs, literals):
        return inputs[1]

    def compute(self, attrs, src, dst):
        if "target" in attrs:
            return _target(attrs).copy_into(src, dst)
        np.copyto(dst, src)
        return dst


def allocate_attrs(shape: Shape, target: str) -> dict:
    return {"target": target, "dtype": shape.dtype, "lens": list(shape.lens)}
