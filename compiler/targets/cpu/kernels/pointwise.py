"""Element-wise ops and fused chains of them (``FusedPointwise``) without the reference's
per-call work: each step is one NumPy ufunc writing into a buffer prepared at lowering, or, where
numba is importable, a whole chain is one compiled ufunc (one pass over memory, broadcasting by
NumPy's ufunc machinery).

Each supported op has two spellings that compute what its reference computation does in the
same dtype: a NumPy one, ``numpy(out, attrs, *inputs)``, and an expression over scalars for the
compiled chain (``{0}``, ``{1}``: the operands; ``T``: the dtype's scalar type, so that constants
do not widen float32 to float64).
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
from scipy import special

from .common import FAST_DTYPES, output_buffer
from .erf import erf_f32


def _relu(out, attrs, x):
    return np.maximum(x, 0, out=out)


def _sigmoid(out, attrs, x):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.divide(1, out, out=out)


def _erf(out, attrs, x):
    if x.dtype == np.float32:
        np.copyto(out, erf_f32(x))
        return out
    return special.erf(x, out=out)


def _clip(out, attrs, x):
    src = x
    if attrs.get("min") is not None:
        src = np.maximum(src, x.dtype.type(attrs["min"]), out=out)
    if attrs.get("max") is not None:
        src = np.minimum(src, x.dtype.type(attrs["max"]), out=out)
    if src is x:
        np.copyto(out, x)
    return out


def _pow(out, attrs, x, y):
    return np.power(x, y, out=out)


def _ufunc(fn):
    return lambda out, attrs, *args: fn(*args, out=out)


def _clip_expr(attrs) -> str:
    expr = "{0}"
    if attrs.get("min") is not None:
        expr = f"_max({expr}, T({float(attrs['min'])!r}))"
    if attrs.get("max") is not None:
        expr = f"_min({expr}, T({float(attrs['max'])!r}))"
    return expr


# op -> (NumPy spelling, scalar expression or a function of the attributes giving one)
OPS = {
    "Add": (_ufunc(np.add), "({0} + {1})"),
    "Sub": (_ufunc(np.subtract), "({0} - {1})"),
    "Mul": (_ufunc(np.multiply), "({0} * {1})"),
    "Div": (_ufunc(np.divide), "({0} / {1})"),
    "Max": (_ufunc(np.maximum), "_max({0}, {1})"),
    "Min": (_ufunc(np.minimum), "_min({0}, {1})"),
    "Pow": (_pow, "({0} ** {1})"),
    "Relu": (_relu, "_max({0}, T(0))"),
    "Sigmoid": (_sigmoid, "(T(1) / (T(1) + math.exp(-{0})))"),
    "Tanh": (_ufunc(np.tanh), "math.tanh({0})"),
    "Exp": (_ufunc(np.exp), "math.exp({0})"),
    "Sqrt": (_ufunc(np.sqrt), "math.sqrt({0})"),
    "Neg": (_ufunc(np.negative), "(-{0})"),
    "Abs": (_ufunc(np.abs), "abs({0})"),
    "Reciprocal": (_ufunc(np.reciprocal), "(T(1) / {0})"),
    "Erf": (_erf, "math.erf({0})"),
    "Clip": (_clip, _clip_expr),
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
    """Whether chains are compiled with numba: it is importable and ``PERFBOT_CPU_JIT`` is
    not ``0``."""
    if os.environ.get("PERFBOT_CPU_JIT", "1").strip() == "0":
        return False
    return _numba() is not None


@lru_cache(maxsize=1)
def _numba():
    try:
        import numba
    except ImportError:  # the NumPy spelling runs instead
        return None
    return numba


def pointwise_kernel(ins):
    """One element-wise instruction: its NumPy spelling into a kept buffer."""
    if not fusible(ins):
        return None
    numpy_fn = OPS[ins.op][0]
    buffer = output_buffer(ins.shape.lens, ins.shape.dtype)
    attrs = ins.attrs
    return lambda *args: numpy_fn(buffer(), attrs, *args)


def fused_pointwise_kernel(ins):
    """A ``FusedPointwise`` chain: one compiled ufunc, else its steps' NumPy spellings, each into
    a buffer of its own kept between runs."""
    dtype = np.dtype(ins.shape.dtype)
    steps = ins.attrs["steps"]
    if not all(i.shape.dtype == dtype.name and i.shape.static for i in ins.inputs) or \
            dtype.name not in FAST_DTYPES or not ins.shape.static:
        return None
    buffer = output_buffer(ins.shape.lens, dtype)
    if jit_enabled():
        ufunc = compiled_chain(chain_source(steps, len(ins.inputs)), dtype.name, len(ins.inputs))
        return lambda *args: ufunc(*args, out=buffer())
    return _numpy_chain(ins, steps, buffer)


def _numpy_chain(ins, steps, buffer):
    """The steps one after another, each writing a kept buffer of its own shape (the last one
    the instruction's)."""
    dtype = ins.shape.dtype
    shapes = step_shapes(steps, [i.shape.lens for i in ins.inputs])
    buffers = [output_buffer(lens, dtype) for lens in shapes[:-1]] + [buffer]
    plan = [(OPS[op][0], attrs, refs, buf) for (op, attrs, refs), buf in zip(steps, buffers)]

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


def chain_source(steps, n_inputs: int) -> str:
    """Python source of a scalar function computing the chain; operand ``r`` is input ``r``
    below ``n_inputs``, else the result of step ``r - n_inputs``."""
    names = [f"x{k}" for k in range(n_inputs)]
    lines = [f"def chain({', '.join(names)}):"]
    for k, (op, attrs, refs) in enumerate(steps):
        expr = OPS[op][1]
        expr = expr(attrs) if callable(expr) else expr
        lines.append(f"    t{k} = " + expr.format(*[names[r] for r in refs]))
        names.append(f"t{k}")
    lines.append(f"    return t{len(steps) - 1}")
    return "\n".join(lines)


@lru_cache(maxsize=256)
def compiled_chain(source: str, dtype: str, n_inputs: int):
    """The chain as a NumPy ufunc compiled by numba (once per distinct chain and dtype)."""
    import math
    numba = _numba()
    nan_max, nan_min = _scalar_helpers()
    scope = {"math": math, "T": np.dtype(dtype).type, "_max": nan_max, "_min": nan_min}
    exec(compile(source, "<fused pointwise chain>", "exec"), scope)  # noqa: S102 (our own source)
    signature = f"{dtype}({', '.join([dtype] * n_inputs)})"
    return numba.vectorize([signature], nopython=True)(scope["chain"])


@lru_cache(maxsize=1)
def _scalar_helpers():
    """np.maximum/np.minimum's rule for two scalars: a NaN operand wins."""
    numba = _numba()

    @numba.njit(inline="always")
    def nan_max(a, b):
        return a if a != a or a > b else b

    @numba.njit(inline="always")
    def nan_min(a, b):
        return a if a != a or a < b else b
    return nan_max, nan_min
