"""Helpers the op definitions share: broadcasting of (possibly run-time) lengths, axis
normalisation, base classes of element-wise ops, and folding of optional ONNX inputs."""
from __future__ import annotations

from typing import Any, Sequence

import ml_dtypes  # noqa: F401  (bfloat16 for NumPy)
import numpy as np

from compiler.ir.shape import Shape, TupleShape

from .registry import Op, is_device_array


class ValueNeeded(ValueError):
    """A result's rank (or count) depends on a value only known at run time."""


def unknown_rank():
    """Raise ``ValueNeeded``: a shape rule cannot give a rank that depends on run-time values."""
    raise ValueNeeded("the result's rank is not known before run time")


def lowest(dtype):
    """The identity of max over ``dtype``: -inf for floats, the minimum for ints, False for bool."""
    if dtype == np.bool_:
        return False
    return -np.inf if np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16" else np.iinfo(dtype).min


def broadcast_lens(*all_lens: Sequence[int | None]) -> tuple[int | None, ...]:
    """NumPy broadcasting of lengths where ``None`` is a length known only at run time."""
    rank = max((len(x) for x in all_lens), default=0)
    out: list[int | None] = []
    for d in range(rank):
        dims = [x[len(x) - rank + d] for x in all_lens if len(x) - rank + d >= 0]
        known = {n for n in dims if n is not None and n != 1}
        if len(known) > 1:
            raise ValueError(f"cannot broadcast lengths {[tuple(x) for x in all_lens]}")
        if known:
            out.append(known.pop())
        elif any(n is None for n in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def norm_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def norm_axes(axes, rank: int) -> list[int]:
    return [norm_axis(int(a), rank) for a in axes]


def axis_attr(node, default: int | None, rank: int | None = None) -> int | None:
    """The node's ``axis`` attribute (``default`` when absent, None for an optional axis that
    is absent) made non-negative for ``rank``, input 0's rank unless given."""
    axis = node.attrs.get("axis", default)
    if axis is None:
        return None
    return norm_axis(int(axis), node.input(0).shape.ndim if rank is None else rank)


def int_list(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def on_host(value) -> np.ndarray:
    """``value`` as a NumPy array, fetched from the device where control flow on a device target
    needs a value on the host."""
    return value.get() if is_device_array(value) else np.asarray(value)


def array_module(*values):
    """The array module of ``values``: the device module (CuPy) when any of them is one of its
    arrays, else NumPy. Lets reference code written over arrays also run over device arrays."""
    if any(is_device_array(v) for v in values):
        import cupy
        return cupy
    return np


def scalar_int(value) -> int:
    """The int a one-element tensor input holds (ONNX passes scalars such as k, axis or depth
    as tensors of shape () or (1,))."""
    return int(on_host(value).reshape(-1)[0])


def truth(value) -> bool:
    """The bool a one-element condition tensor holds (If's cond, Loop's cond)."""
    return bool(on_host(value).reshape(-1)[0])


def scalar_or_none(value):
    """The Python scalar a one-element tensor input holds; None for an empty tensor (how
    exporters write an omitted optional scalar such as Clip's min or Pad's value)."""
    value = np.asarray(value).reshape(-1)
    return value[0].item() if value.size else None


def attr_or_literal_ints(node, name: str, index: int, what: str) -> list[int] | None:
    """Ints that later opsets moved from attribute ``name`` to input ``index`` (Squeeze's axes,
    Split's sizes): the attribute, else the input's literal value, else None when neither is
    given. A run-time input raises ``ValueNeeded`` (``what`` names it in the message)."""
    if name in node.attrs:
        return [int(v) for v in node.attrs[name]]
    if node.input(index) is None:
        return None
    value = node.literal(index)
    if value is None:
        raise ValueNeeded(f"{what} are only known at run time")
    return int_list(value)


def float_list(value) -> list[float]:
    return [float(v) for v in np.asarray(value).reshape(-1)]


def erf(x, out=None):
    """SciPy's erf, with SciPy imported on first use: ``scipy.special`` took about half a second
    to import, which every process that loaded the op registry paid (a benchmark's worker in its
    compile time) whether or not its model has an Erf or a Gelu."""
    from scipy import special
    return special.erf(x, out=out)


# Dtypes compared as objects: ``dtype.name`` is built by Python code on each call (about 3 us),
# and ``widen`` runs for nearly every op a cpu-target program computes.
BFLOAT16 = np.dtype("bfloat16")
FLOAT16 = np.dtype(np.float16)


def widen(x: np.ndarray) -> np.ndarray:
    """Compute bfloat16 in float32 (NumPy ufuncs and SciPy do not all take it)."""
    return x.astype(np.float32) if x.dtype == BFLOAT16 else x


def accumulate(x: np.ndarray) -> np.ndarray:
    """Products and sums of 16-bit floats in float32 (as BLAS-backed runtimes accumulate; NumPy
    has no half-precision BLAS, so this is also far faster)."""
    return x.astype(np.float32) if x.dtype == BFLOAT16 or x.dtype == FLOAT16 else x


def result(value, dtype) -> np.ndarray:
    return np.asarray(value).astype(dtype, copy=False)


class UnaryOp(Op):
    """An element-wise op of one input whose result has the input's shape and type."""

    pointwise = True

    def shape(self, attrs, inputs, literals):
        return inputs[0]

    def compute(self, attrs, x):
        return result(self.apply(attrs, widen(x)), x.dtype)

    def apply(self, attrs, x):
        raise NotImplementedError


class BinaryOp(Op):
    """An element-wise op over broadcast inputs; ``out_dtype`` None keeps the first input's."""

    pointwise = True
    out_dtype: str | None = None

    def shape(self, attrs, inputs, literals):
        lens = broadcast_lens(*(s.lens for s in inputs))
        return Shape(self.out_dtype or inputs[0].dtype, lens)

    def compute(self, attrs, *args):
        dtype = self.out_dtype or args[0].dtype
        return result(self.apply(attrs, *(widen(a) for a in args)), dtype)

    def apply(self, attrs, *args):
        raise NotImplementedError


def given_inputs(node, names: Sequence[str]) -> tuple[list[str], list]:
    """The inputs ``node`` gives, with their names from ``names``, for ops whose optional inputs
    may be left out anywhere: the op keeps the names in ``attrs["inputs"]`` so that ``compute``
    can tell which arrays it was passed."""
    return [n for n, i in zip(names, node.inputs) if i is not None], [i for i in node.inputs if i is not None]


def tuple_shape(*shapes: Shape) -> TupleShape:
    return TupleShape(tuple(shapes))


# ----- optional ONNX inputs that are usually constants ------------------------------------------
def fold_inputs(node, first: int, names: Sequence[str], convert=int_list) -> tuple[dict, list]:
    """Turn inputs ``first..`` of ``node`` into attributes named ``names`` when they are
    literals (value through ``convert``) or absent (None); run-time ones stay inputs, listed in
    ``attrs["dynamic"]`` in order. Returns ``(attrs, inputs)`` with ``node.attrs`` merged in."""
    attrs = dict(node.attrs)
    inputs = [node.input(i) for i in range(first)]
    if any(i is None for i in inputs):
        node.unsupported(f"input {inputs.index(None)} is required")
    dynamic = []
    for k, name in enumerate(names):
        ins = node.input(first + k)
        value = node.literal(first + k)
        if ins is None:
            attrs.setdefault(name, None)
        elif value is not None:
            attrs[name] = (convert[name] if isinstance(convert, dict) else convert)(value)
        else:
            attrs[name] = None
            inputs.append(ins)
            dynamic.append(name)
    if dynamic:
        attrs["dynamic"] = dynamic
    return attrs, inputs


def run_values(attrs: dict, args: Sequence[np.ndarray], first: int, names: Sequence[str],
               convert=int_list) -> dict[str, Any]:
    """The values of folded inputs at run time: attributes, overridden by the run-time inputs
    that ``fold_inputs`` kept."""
    values = {n: attrs.get(n) for n in names}
    for name, value in zip(attrs.get("dynamic", ()), args[first:]):
        values[name] = (convert[name] if isinstance(convert, dict) else convert)(value)
    return values
