"""From instructions to device calls: a registry of per-op lowerings.

A lowering is ``factory(ins, lowering) -> fn``; ``fn(*inputs)`` takes the instruction's input
values (device arrays) and returns its result. Factories read attributes and literal inputs once,
at lowering time, so ``fn`` only launches work. An op without a lowering runs its reference
computation on device arrays (NumPy's array-function protocol sends ``np.*`` calls to CuPy); if
that fails the step runs on the host and is counted in ``host_fallbacks``, so a report can say so.
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ops.registry import get_op

from .concat_chain import chains_of
from .conv_split import SharedSplits

log = logging.getLogger(__name__)

LOWERINGS: dict[str, Callable] = {}


def lowers(*names: str):
    def deco(factory):
        for n in names:
            LOWERINGS[n] = factory
        return factory
    return deco


def literal_of(ins, k: int):
    """The host value of input ``k`` when it is a literal, else None."""
    if k < len(ins.inputs) and ins.inputs[k].op == LITERAL:
        return np.asarray(ins.inputs[k].value)
    return None


class Lowering:
    """What lowerings share for one root: the array backend, the ``GpuOptions`` (``options``),
    the run-time context."""

    def __init__(self, backend, options, program, context):
        self.backend = backend
        self.xp = backend.xp
        self.options = options
        self.program = program
        self.context = context
        self.host_fallbacks: list[str] = []
        self._constants: dict[int, object] = {}
        self.shared_splits = SharedSplits()     # convolution input splits made once per run
        self._chains: dict = {}                 # id(module) -> {Concat: ConcatChain}

    def constant(self, ins):
        """A literal's value on the device, uploaded once."""
        if ins.uid not in self._constants:
            # asarray, not ascontiguousarray: the latter turns a 0-d literal into shape (1,).
            self._constants[ins.uid] = self.backend.to_device(np.asarray(ins.value, order="C"))
        return self._constants[ins.uid]

    def concat_chains(self, module) -> dict:
        """{Concat: its ``ConcatChain``} of ``module``, found once (none when switched off)."""
        chains = self._chains.get(id(module))
        if chains is None:
            chains = self._chains[id(module)] = chains_of(module)
        return chains

    def constant_bytes(self) -> int:
        return int(sum(v.nbytes for v in self._constants.values()))

    def lower(self, ins) -> Callable:
        factory = LOWERINGS.get(ins.op)
        if factory is not None:
            fn = factory(ins, self)
            if fn is not None:
                return fn
        return self.generic(ins)

    def generic(self, ins) -> Callable:
        """The op's reference computation over device arrays, else on the host."""
        op = get_op(ins.op)
        backend = self.backend
        dtype = getattr(ins.shape, "dtype", None)
        state = {"host": not backend.on_gpu}
        fallbacks = self.host_fallbacks

        def coerce(value):
            if isinstance(value, (tuple, list)):
                return tuple(backend.to_device(v) if not backend.is_device_array(v) else v for v in value)
            if not backend.is_device_array(value):
                value = backend.to_device(np.asarray(value))
            if dtype is not None and value.dtype.name != dtype:
                value = value.astype(dtype)
            return value

        def run(*args):
            if not state["host"]:
                try:
                    return coerce(op.compute(ins.attrs, *args))
                except Exception as exc:  # noqa: BLE001 - this op's NumPy code needs host arrays
                    state["host"] = True
                    fallbacks.append(f"{ins.op}: {type(exc).__name__}: {str(exc)[:120]}")
                    log.info("gpu: %s runs on the host (%s)", ins.op, exc)
            host = [backend.to_host(a) for a in args]
            return coerce(op.compute(ins.attrs, *host))
        run.capturable = False   # may move data through the host
        return run
