"""Element-wise ops and fused chains of them (``FusedPointwise``) without the reference's
per-call work: each step is one NumPy ufunc call writing into a buffer prepared at lowering
(no temporaries, no dtype checks, attributes resolved once). float32 tanh, sigmoid and erf run
as numba-compiled loops where numba is importable (``jit_math``: cached on disk, so compiled
once per machine, not per model), else as NumPy spellings.

Each spelling computes what the op's reference computation does, in the same dtype.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from functools import lru_cache

import numpy as np

from compiler.ops.common import erf

from .common import FAST_DTYPES, clamp, output_buffer
from .erf import erf_f32


def _relu(out, attrs, x):
    return clamp(x, 0, None, out)


def _sigmoid(out, attrs, x):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.divide(1, out, out=out)


def _erf(out, attrs, x):
    if x.dtype == np.float32:
        np.copyto(out, erf_f32(x))
        return out
    return erf(x, out=out)


def _clip(out, attrs, x):
    return clamp(x, attrs.get("min"), attrs.get("max"), out)


def _pow(out, attrs, x, y):
    return np.power(x, y, out=out)


def _leaky_relu(out, attrs, x):
    np.multiply(x, x.dtype.type(attrs["alpha"]), out=out)
    np.copyto(out, x, where=~(x < 0))   # NaN keeps x, as np.where(x < 0, ...) does
    return out


def _hard_sigmoid(out, attrs, x):
    np.multiply(x, x.dtype.type(attrs["alpha"]), out=out)
    out += x.dtype.type(attrs["beta"])
    return clamp(out, 0, 1, out)


def _hard_swish(out, attrs, x):
    np.divide(x, 6, out=out)
    out += x.dtype.type(0.5)
    clamp(out, 0, 1, out)
    return np.multiply(x, out, out=out)


def _ufunc(fn):
    return lambda out, attrs, *args: fn(*args, out=out)


# op -> its NumPy spelling, ``fn(out, attrs, *inputs)``
OPS = {
    "Add": _ufunc(np.add),
    "Sub": _ufunc(np.subtract),
    "Mul": _ufunc(np.multiply),
    "Div": _ufunc(np.divide),
    "Max": _ufunc(np.maximum),
    "Min": _ufunc(np.minimum),
    "Pow": _pow,
    "Relu": _relu,
    "Sigmoid": _sigmoid,
    "Tanh": _ufunc(np.tanh),
    "Exp": _ufunc(np.exp),
    "Sqrt": _ufunc(np.sqrt),
    "Neg": _ufunc(np.negative),
    "Abs": _ufunc(np.abs),
    "Reciprocal": _ufunc(np.reciprocal),
    "Erf": _erf,
    "Clip": _clip,
    "LeakyRelu": _leaky_relu,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
}
ARITY = {"Add": 2, "Sub": 2, "Mul": 2, "Div": 2, "Max": 2, "Min": 2, "Pow": 2}


def fusible(ins) -> bool:
    """An element-wise instruction this module runs: a listed op on static float32/64 values of
    one dtype, with no run-time attribute input (Clip's bounds must be literals)."""
    if ins.op not in OPS or ins.attrs.get("dynamic"):
        return False
    if len(ins.inputs) != ARITY.get(ins.op, 1):
        return False
    shapes = [ins.shape] + [i.shape for i in ins.inputs]
    return all(getattr(s, "static", False) and getattr(s, "dtype", None) == ins.shape.dtype
               for s in shapes) and ins.shape.dtype in FAST_DTYPES


def jit_enabled() -> bool:
    """Whether the cpu target uses its numba-compiled loops: numba is installed and
    ``PERFBOT_CPU_JIT`` is not ``0``."""
    if os.environ.get("PERFBOT_CPU_JIT", "1").strip() == "0":
        return False
    return bool(_numba())


@lru_cache(maxsize=1)
def _numba() -> bool:
    """numba is installed (found, not imported: its import takes ~0.5 s)."""
    return importlib.util.find_spec("numba") is not None


def jitted(module: str, name: str):
    """``name`` of the numba-compiled ``module`` (``rnn_jit``, ...), imported at its first call:
    lowering stays free of numba's import, which a process pays once, at its first run."""
    loaded = None

    def call(*args):
        nonlocal loaded
        if loaded is None:
            loaded = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return loaded(*args)
    return call


def _compiled(op: str, dtype):
    """The numba spelling of ``op`` for ``dtype``, or None."""
    if dtype != np.float32 or op not in ("Tanh", "Sigmoid", "Erf") or not jit_enabled():
        return None
    loop = jitted("jit_math", {"Tanh": "tanh32_into", "Sigmoid": "sigmoid32_into", "Erf": "erf32_into"}[op])

    def run(out, attrs, x):
        loop(x.reshape(-1), out.reshape(-1))
        return out
    return run


def spelling(op: str, dtype):
    return _compiled(op, np.dtype(dtype)) or OPS[op]


def pointwise_kernel(ins):
    """One element-wise instruction: its spelling into a kept buffer."""
    if not fusible(ins):
        return None
    fn = spelling(ins.op, ins.shape.dtype)
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    attrs = ins.attrs
    return lambda *args: fn(buffer(), attrs, *args)


# Chains with a numba loop of their own (float32): x * sigmoid(x), either operand order.
SWISH = ([["Sigmoid", [0]], ["Mul", [0, 1]]], [["Sigmoid", [0]], ["Mul", [1, 0]]])


def fused_pointwise_kernel(ins):
    """A ``FusedPointwise`` chain: its steps one after another, each writing a kept buffer of its
    own shape (the last one the instruction's result); x * sigmoid(x) in one numba pass."""
    dtype = ins.shape.dtype
    if not all(i.shape.dtype == dtype and i.shape.static for i in ins.inputs) or \
            dtype not in FAST_DTYPES or not ins.shape.static:
        return None
    steps = ins.attrs["steps"]
    buffer = output_buffer(ins.shape.lens, dtype)
    if [[op, refs] for op, _, refs in steps] in SWISH and dtype == "float32" and jit_enabled():
        swish32_into = jitted("jit_math", "swish32_into")

        def swish(x):
            out = buffer()
            swish32_into(x.reshape(-1), out.reshape(-1))
            return out
        return swish
    shapes = step_shapes(steps, [i.shape.lens for i in ins.inputs])
    plan = [(spelling(op, dtype), attrs, refs, output_buffer(lens, dtype))
            for (op, attrs, refs), lens in zip(steps, shapes)]

    def run(*args):
        values = list(args)
        for fn, attrs, refs, buf in plan:
            values.append(fn(buf(), attrs, *[values[r] for r in refs]))
        return values[-1]
    return run


def step_shapes(steps, input_lens) -> list[tuple]:
    """The broadcast lengths of every step's result."""
    lens = [tuple(x) for x in input_lens]
    for _, _, refs in steps:
        lens.append(np.broadcast_shapes(*[lens[r] for r in refs]))
    return lens[len(input_lens):]
