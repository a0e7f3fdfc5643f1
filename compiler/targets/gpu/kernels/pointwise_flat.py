"""A fused elementwise body over packed operands, indexed flat: each operand is either packed at
the output's full shape (read at ``i``), packed over the output's trailing axes and broadcast over
the leading ones, a bias or a scalar (read at ``i % m``), or packed over leading and trailing
axes and broadcast over the ones between, as a squeeze-excitation scale (N, C) is over a
channels-last (N, H, W, C) tensor (read at ``(i / d) * m + i % m``), or full-size rows at a wider
stride, as a channel slice of a wider channels-last buffer is (``Rows``: read at
``(i / c) * s + i % c``). 32-bit indices, four consecutive elements a thread, with vector loads and
stores where the operands allow.

Channels-last operands run in their memory order: the body is elementwise, so it runs over the
operands' axes permuted to that order (full-size operands then packed) and hands the result back
in the same layout.

CuPy's ElementwiseKernel indexes every broadcast operand through a per-axis division of the
element number; ViT-B/16's bias + GELU over (6,304 tokens, 3,072) fp16 took 96 us a layer that way
on the H200 (about 0.8 TB/s of its 4.2 TB/s copy bandwidth). The body's text is
``pointwise_codegen``'s, unchanged.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..pointwise_codegen import C_TYPE, generate
from .raw_source import cuda_source

VEC = 4
THREADS = 256

# Each thread takes VEC consecutive elements. An operand read at consecutive places for them (a
# full-size one, or a broadcast one whose trailing run is a multiple of VEC) whose start is aligned
# is read with one vector load (16 bytes of fp32, 8 of fp16), the others a value a lane; the
# result is stored with one vector store. With one 2- or 4-byte load per thread and operand, the
# kernel moved about 1.2 TB/s of the H200's 4.2 (a squeeze-excitation scale over (32, 144, 56, 56)
# fp16: 49 us).
_TEMPLATE = cuda_source("pointwise_flat_template")

_kernels: dict = {}


@dataclass(frozen=True)
class Rows:
    """A full-size operand whose last axis (``c`` elements) is packed and whose leading axes run
    as one axis of rows ``stride`` elements apart (``stride`` > ``c``). DenseNet reads each layer's
    input as a channel slice of its block's channels-last buffer; through CuPy's general kernel,
    indexed axis by axis, its batch-norm + ReLU kernels ran at about 0.8 TB/s of the H200's 4.2 and
    took 1.4 of 3.2 ms of DenseNet-121 b32 fp16."""
    c: int
    stride: int


def layout(a, out_shape):
    """How the kernel reads ``a`` for an output of ``out_shape``: 0 when packed at the full shape;
    ``Rows`` when full-size rows at a wider stride; m > 0 when packed over the output's trailing
    axes (m elements, read at i % m); (d, m) when packed over leading and trailing axes with the
    axes between broadcast (read at (i / d) * m + i % m: d output elements per leading index, m
    trailing ones); None when none of these (the general kernel runs)."""
    if a.ndim > len(out_shape):
        return None
    out = tuple(out_shape)
    lens = (1,) * (len(out) - a.ndim) + tuple(a.shape)
    if not a.flags.c_contiguous:
        return _rows(a) if lens == out else None
    if lens == out:
        return 0
    differ = [k for k, (n, o) in enumerate(zip(lens, out)) if n != o]
    first, last = differ[0], differ[-1]
    if any(lens[k] != 1 for k in range(first, last + 1)):
        return None          # a length that is neither the output's nor one
    inner = max(int(np.prod(out[last + 1:], dtype=np.int64)), 1)
    if all(n == 1 for n in lens[:first]):
        return inner
    return (int(np.prod(out[first:], dtype=np.int64)), inner)


def _rows(a) -> Rows | None:
    """``a`` as ``Rows`` where its last axis is packed and its leading axes collapse into one at a
    stride wider than a row, else None."""
    if a.ndim < 2 or a.strides[-1] != a.itemsize:
        return None
    for k in range(a.ndim - 2):
        if a.shape[k] > 1 and a.strides[k] != a.strides[k + 1] * a.shape[k + 1]:
            return None
    stride, c = a.strides[-2] // a.itemsize, a.shape[-1]
    if a.strides[-2] % a.itemsize or stride < c:
        return None
    return Rows(c, stride)


def _moduli(m) -> tuple:
    """The numbers the kernel takes for an operand of layout ``m`` (none for a packed full-size
    one, layout 0: every other layout is truthy)."""
    if isinstance(m, Rows):
        return (m.c, m.stride)
    return m if isinstance(m, tuple) else (m,)


def source(body: list[dict], in_dtypes: list[str], layouts: list, packed: tuple = ()) -> tuple[str, str]:
    """(kernel name, CUDA source) of ``body`` over operands of these dtypes and layouts; operand k
    is read with vector loads where ``packed[k]`` (``vector_loads``)."""
    _ins, _outs, operation = generate(body, in_dtypes)
    out_type = C_TYPE[body[-1]["dtype"]]
    packed = tuple(packed) or (False,) * len(in_dtypes)
    params = ", ".join(f"const {C_TYPE[d]}* __restrict__ in{k}" for k, d in enumerate(in_dtypes))
    mods = "".join(f", unsigned int c{k}, unsigned int s{k}" if isinstance(m, Rows)
                   else f", unsigned int d{k}, unsigned int m{k}" if isinstance(m, tuple) else f", unsigned int m{k}"
                   for k, m in enumerate(layouts) if m)
    loads = "\n".join(f"        const {C_TYPE[d]} x{k} = in{k}[{_index(k, m)}];"
                      for k, (d, m) in enumerate(zip(in_dtypes, layouts)))
    vector_loads = "\n".join(
        f"        const Pack<{C_TYPE[d]}> p{k} = *(const Pack<{C_TYPE[d]}>*)(in{k} + {_index(k, m, 'i0')});"
        for k, (d, m, v) in enumerate(zip(in_dtypes, layouts, packed)) if v)
    lane_loads = "\n".join(
        f"            const {C_TYPE[d]} x{k} = " + (f"p{k}.v[u];" if v else f"in{k}[{_index(k, m)}];")
        for k, (d, m, v) in enumerate(zip(in_dtypes, layouts, packed)))
    body_text = "\n".join("            " + line for line in operation.split("\n"))
    text = (_TEMPLATE.replace("PARAMS", params).replace("MODS", mods).replace("VECTOR_LOADS", vector_loads)
            .replace("LANE_LOADS", lane_loads).replace("LOADS", loads).replace("OUT_T", out_type)
            .replace("OPERATION", body_text).replace("VEC", str(VEC)))
    name = "pwf_" + hashlib.sha1(text.encode()).hexdigest()[:16]
    return name, text.replace("NAME", name)


def vector_loads(a, m) -> bool:
    """Whether operand ``a`` of layout ``m`` is read with one vector load for VEC consecutive
    elements: its places for them are consecutive (full size, or a trailing run and, between
    leading and trailing axes, a block that VEC divides) and its start is aligned to the load."""
    if isinstance(m, Rows):
        consecutive = m.c % VEC == 0 and m.stride % VEC == 0
    elif isinstance(m, tuple):
        consecutive = m[1] % VEC == 0 and m[0] % VEC == 0
    else:
        consecutive = m == 0 or m % VEC == 0
    address = a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data    # CuPy, or NumPy in tests
    return consecutive and address % (VEC * a.itemsize) == 0


def _index(k: int, m, i: str = "i") -> str:
    if isinstance(m, Rows):
        return f"({i} / c{k}) * s{k} + {i} % c{k}"
    if isinstance(m, tuple):
        return f"({i} / d{k}) * m{k} + {i} % m{k}"
    return f"{i} % m{k}" if m else i


def _kernel(body, in_dtypes, layouts, packed):
    """The compiled kernel for these layouts and loads (one per source text in the process)."""
    import cupy
    name, text = source(body, in_dtypes, layouts, packed)
    kernel = _kernels.get(text)
    if kernel is None:
        kernel = _kernels[text] = cupy.RawKernel(text, name)
    return kernel


def run_flat(body, in_dtypes, args, out_shape, out_dtype, by_layouts: dict | None = None, out=None):
    """The body over ``args`` into a new array, or None where an operand's layout is not one this
    kernel reads (the caller runs the general kernel). The result is packed, in the memory order
    of the full-size operands when they are channels-last. ``by_layouts``: the caller's kernels
    by operand layouts, so a run that repeats a layout skips generating the source. ``out``: a
    C-contiguous array to write into instead (a caller's output buffer); None is returned where
    the operands would lay the result out in another order."""
    import cupy
    n = int(np.prod(out_shape, dtype=np.int64))
    if n == 0 or n >= 2 ** 31 or not all(isinstance(a, cupy.ndarray) for a in args):
        return None
    perm = _permuted_order(args, out_shape)
    if out is not None and (perm is not None or not out.flags.c_contiguous):
        return None
    if perm is not None:
        rank = len(out_shape)
        args = [a.reshape((1,) * (rank - a.ndim) + a.shape).transpose(perm) for a in args]
        out_shape = tuple(out_shape[a] for a in perm)
    layouts = [layout(a, out_shape) for a in args]
    if any(m is None for m in layouts):
        return None
    if any(isinstance(m, Rows) and m.stride * (n // m.c) >= 2 ** 31 for m in layouts):
        return None       # the rows' places need 64-bit indices
    packed = tuple(vector_loads(a, m) for a, m in zip(args, layouts))
    key = (tuple(layouts), packed)
    kernel = by_layouts.get(key) if by_layouts is not None else None
    if kernel is None:
        kernel = _kernel(body, in_dtypes, layouts, packed)
        if by_layouts is not None:
            by_layouts[key] = kernel
    if out is None:
        out = cupy.empty(out_shape, dtype=out_dtype)
    mods = [np.uint32(v) for m in layouts if m for v in _moduli(m)]
    kernel((-(-n // (THREADS * VEC)),), (THREADS,), (*args, out, np.uint32(n), *mods))
    return out if perm is None else out.transpose(tuple(np.argsort(perm)))


def _permuted_order(args, out_shape):
    """The memory order of the first full-size operand that is packed in another order than its
    logical one (channels-last), else None."""
    for a in args:
        if tuple(a.shape) == tuple(out_shape) and not a.flags.c_contiguous:
            return memory_order(a)
    return None


def memory_order(x):
    """The permutation of ``x``'s axes from largest to smallest stride when, in that order, its
    innermost axis is packed and each outer stride covers the axes within it (a channels-last
    tensor gives (0, 2, 3, 1), so does a channel slice of a wider channels-last buffer, as a
    DenseNet concatenation is), else None."""
    perm = tuple(sorted(range(x.ndim), key=lambda a: (-abs(x.strides[a]), a)))
    if perm == tuple(range(x.ndim)):
        return None
    lens = [x.shape[a] for a in perm]
    strides = [x.strides[a] for a in perm]
    if strides[-1] != x.itemsize:
        return None
    for k in range(x.ndim - 1):
        if lens[k] > 1 and strides[k] < strides[k + 1] * lens[k + 1]:
            return None
    return perm
