"""Lowerings of data movement (CuPy views and gathers), shape-derived values and Trilu.

Transpose, Slice, Split and Expand with parameters known at lowering time are views of their
input, whatever its strides (``_views``): a transposed or sliced view of a view stays a view, so
attention's head split and the q/k/v split of a packed projection move no data. The other data
movement goes through ``probe`` (Pad has its own lowering, ``ops_pad``): the op's reference computation is run once on the host over
element *numbers* (``arange``); when the result is an affine pattern the op becomes a strided view
on the device, otherwise one gather by those numbers. Either way the device does no Python-level
work per element and the op's semantics are exactly the reference's.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape, TupleShape
from compiler.ops.registry import get_op
from compiler.ops.slice_pad import slice_bounds

from . import concat_chain
from .kernels import slice_copy
from .kernels.channels_last import pixel_stride
from .lowering import literal_of, lowers
from .ops_gemm import matmul_for


def _static(shape) -> bool:
    return isinstance(shape, Shape) and shape.static


# ----- probing data movement ----------------------------------------------------------------
def _affine(index: np.ndarray):
    """(offset, strides) if ``index`` is an affine function of its position, else None."""
    if index.size == 0:
        return None
    offset = int(index.flat[0])
    strides = []
    for d, n in enumerate(index.shape):
        if n <= 1:
            strides.append(0)
            continue
        sel = [0] * index.ndim
        sel[d] = 1
        strides.append(int(index[tuple(sel)]) - offset)
    grid = offset + sum(np.arange(n).reshape([-1 if i == d else 1 for i in range(index.ndim)]) * s
                        for d, (n, s) in enumerate(zip(index.shape, strides)))
    if not np.array_equal(np.broadcast_to(grid, index.shape), index):
        return None
    if min(strides, default=0) < 0:
        return None
    return offset, strides


def _movement(xp, out_index: np.ndarray):
    """A device function reading ``x`` at flat positions ``out_index``."""
    shape = out_index.shape
    aff = _affine(out_index)
    if aff is not None:
        offset, strides = aff

        def view(x):
            x = xp.ascontiguousarray(x)
            item = x.dtype.itemsize
            return xp.lib.stride_tricks.as_strided(
                x.reshape(-1)[offset:], shape, tuple(s * item for s in strides))
        return view
    idx = xp.asarray(out_index.astype(np.int64))
    return lambda x: xp.take(xp.ascontiguousarray(x).reshape(-1), idx)


def probe(ins, L, data_inputs=(0,)):
    """Lower a data-movement op whose non-data inputs are literals, or return None."""
    if len(data_inputs) != 1:
        return None
    k = data_inputs[0]
    src = ins.inputs[k].shape
    if not _static(src) or not (isinstance(ins.shape, (Shape, TupleShape))):
        return None
    others = []
    for j, i in enumerate(ins.inputs):
        if j == k:
            others.append(None)
        elif i.op == LITERAL:
            others.append(np.asarray(i.value))
        else:
            return None
    n = int(np.prod(src.lens, dtype=np.int64))
    if n >= 2 ** 31:
        return None
    op = get_op(ins.op)
    numbers = np.arange(1, n + 1, dtype=np.int64).reshape(src.lens)
    args = [numbers if a is None else a for a in others]
    try:
        out = op.compute(ins.attrs, *args)
    except Exception:  # noqa: BLE001 - not a pure movement of int64 data
        return None
    xp = L.xp
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    fns = []
    for o in outs:
        o = np.asarray(o)
        if o.dtype != np.int64:
            return None
        fns.append(_movement(xp, o - 1))
    if isinstance(out, (tuple, list)):
        return lambda x, *rest: tuple(f(x) for f in fns)
    f = fns[0]
    return lambda x, *rest: f(x)


@lowers("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(ins, L):
    if not _static(ins.shape):
        return None
    lens = tuple(ins.shape.lens)
    return lambda x, *rest: x.reshape(lens)


def _slice_index(ins):
    """Slice's index tuple (the reference's clamping, ``slice_bounds``), or None when a bound is
    known only at run time or a step is negative."""
    attrs, x = ins.attrs, ins.inputs[0].shape
    if attrs.get("dynamic"):
        return None
    axes = list(range(len(attrs["starts"]))) if attrs["axes"] is None else list(attrs["axes"])
    steps = attrs["steps"] or [1] * len(axes)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, attrs["starts"], attrs["ends"], steps):
        if st < 0:
            return None     # reversed: the probe's gather keeps every view's strides positive
        s, e = slice_bounds(x.lens[a], s, e, st)
        index[a] = slice(s, e, st)
    return tuple(index)


def _views(ins, L):
    """Transpose, Slice, Split or Expand as a view of the input as it is (no copy to contiguous
    first), or None where the op's parameters are known only at run time."""
    if not _static(ins.inputs[0].shape):
        return None
    if ins.op == "Transpose":
        perm = tuple(ins.attrs["perm"])
        return lambda x: x.transpose(perm)
    if ins.op == "Slice":
        index = _slice_index(ins)
        return None if index is None else (lambda x, *rest: x[index])
    if ins.op == "Split":
        axis, bounds = ins.attrs["axis"], np.cumsum([0, *ins.attrs["split"]])
        parts = [(slice(None),) * axis + (slice(int(a), int(b)),) for a, b in zip(bounds[:-1], bounds[1:])]
        return lambda x: tuple(x[p] for p in parts)
    if ins.op == "Expand" and _static(ins.shape):
        lens, xp = tuple(ins.shape.lens), L.xp
        return lambda x, *rest: xp.broadcast_to(x, lens)
    return None


@lowers("Slice", "Transpose", "Expand", "Split", "DepthToSpace", "SpaceToDepth", "Tile",
        "ReverseSequence")
def _probed(ins, L):
    view = _views(ins, L)
    if view is not None:
        return view
    return probe(ins, L)


@lowers("Resize", "Upsample")
def _resize(ins, L):
    mode = ins.attrs.get("mode", "nearest")
    if mode == "nearest":
        return probe(ins, L)
    return _resize_separable(ins, L)


def _resize_separable(ins, L):
    """Linear/cubic resize as one small dense matrix per resized axis (the reference's own
    weights, built on the host once), applied on the device by GEMMs."""
    from compiler.ops import resize as R
    a = ins.attrs
    if a.get("dynamic") or a.get("coordinate_transformation_mode") == "tf_crop_and_resize" \
            or a.get("antialias"):
        return None
    x = ins.inputs[0].shape
    if not x.static:
        return None
    out, scale, box, axes = R.output_plan(a, x.lens, a.get("roi"), a.get("scales"), a.get("sizes"))
    xp = L.xp
    dtype = ins.shape.dtype
    acc = "float32" if dtype == "float16" else dtype
    mats = []
    for ax in axes:
        if out[ax] == x.lens[ax] and scale[ax] == 1:
            continue
        coords = R.source_coords(a["coordinate_transformation_mode"], out[ax], x.lens[ax], scale[ax], box[ax])
        w = R.weight_matrix(coords, x.lens[ax], a, scale[ax])
        mats.append((ax, xp.asarray(np.asarray(w, dtype=acc))))

    mm, direct = matmul_for(L)

    def resize(v, *rest):
        y = v.astype(acc, copy=False)
        for ax, w in mats:
            moved = xp.ascontiguousarray(xp.moveaxis(y, ax, 0))
            r = mm(w, moved.reshape(moved.shape[0], -1)).reshape((w.shape[0],) + moved.shape[1:])
            y = xp.moveaxis(r, 0, ax)
        return xp.ascontiguousarray(y).astype(dtype, copy=False)
    resize.capturable = direct
    return resize


@lowers("Concat")
def _concat(ins, L):
    xp = L.xp
    axis = int(ins.attrs.get("axis", 0))
    axis = axis + ins.shape.ndim if axis < 0 else axis
    dtype = ins.shape.dtype
    on_gpu = L.backend.on_gpu
    chain = L.concat_chains(ins.module).get(ins)
    if chain is not None:
        def chained(*xs):
            return chain.run(ins, xs, xp, on_gpu)
        chained.path = "concat-chain"
        return chained

    def concat(*xs):
        lens = list(xs[0].shape)            # from the values: a symbolic dim is known by now
        lens[axis] = sum(x.shape[axis] for x in xs)
        out = concat_chain.allocate(xp, lens, dtype, axis, xs)
        offset = 0
        for x in xs:
            concat_chain.write(out, axis, offset, x, on_gpu)
            offset += x.shape[axis]
        return out
    return concat


@lowers("interleave")
def _interleave(ins, L):
    """Channels-last inputs interleaved along channels by one kernel into a channels-last result
    (``slice_copy.interleave_columns``); any other case stacked and merged by CuPy."""
    xp, axis, on_gpu = L.xp, ins.attrs["axis"], L.backend.on_gpu
    lens, dtype = tuple(ins.shape.lens), ins.shape.dtype

    def interleave(*xs):
        if on_gpu and axis == 1 and len(xs) <= slice_copy.MAX_PARTS \
                and all(pixel_stride(x) is not None for x in xs):
            n, c, h, w = lens
            out = xp.empty((n, h, w, c), dtype=dtype)
            rows = [x.transpose(0, 2, 3, 1).reshape(n * h * w, x.shape[1]) for x in xs]
            slice_copy.interleave_columns(out.reshape(n * h * w, c), rows)
            return out.transpose(0, 3, 1, 2)
        return xp.stack(xs, axis=axis + 1).reshape(lens)
    interleave.path = "interleave"
    return interleave


def _gather_axis(ins) -> tuple[int, int | None]:
    """(the gather's axis, made non-negative; the data's length along it, None where only the
    run knows it: a detector's boxes)."""
    rank = ins.inputs[0].shape.ndim
    axis = int(ins.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    return axis, ins.inputs[0].shape.lens[axis]


def _wrapped(xp, i, n):
    """Indices ``i`` as int64, negative ones counted from the end of a length-``n`` axis."""
    i = i.astype(np.int64, copy=False)
    return xp.where(i < 0, i + n, i)


@lowers("Gather")
def _gather(ins, L):
    xp = L.xp
    axis, n = _gather_axis(ins)
    idx_lit = literal_of(ins, 1)
    # negative literal indices wrap here where the length is known; else at run time, below
    if idx_lit is not None and (n is not None or (idx_lit >= 0).all()):
        idx_lit = (np.where(idx_lit < 0, idx_lit + n, idx_lit) if n is not None else idx_lit).astype(np.int64)
        if idx_lit.ndim == 0:
            # One index: a view (PyTorch's q, k, v = proj[0], proj[1], proj[2]), not a copy.
            at = (slice(None),) * axis + (int(idx_lit),)
            return lambda x, i: x[at]
        idx_dev = xp.asarray(idx_lit)
        if L.backend.on_gpu and axis == 0 and idx_lit.ndim == 1 and ins.inputs[0].shape.ndim == 2:
            return _row_gather(xp, idx_dev, ins.shape.dtype)
        return lambda x, i: xp.take(x, idx_dev, axis=axis)

    def gather(x, i):
        return xp.take(x, _wrapped(xp, i, x.shape[axis]), axis=axis)
    return gather


def _row_gather(xp, index, dtype):
    """Whole rows of a 2-D value by a literal row index (a rearrangement made one gather), by the
    row kernel where the rows are packed, else CuPy's take."""
    def gather(x, i):
        if not x.flags.c_contiguous:
            return xp.take(x, index, axis=0)
        out = xp.empty((index.shape[0], x.shape[1]), dtype=dtype)
        slice_copy.gather_rows(out, x, index)
        return out
    gather.path = "gather-rows"
    return gather


@lowers("GatherElements")
def _gather_elements(ins, L):
    xp = L.xp
    axis, _n = _gather_axis(ins)

    def gather(x, i):
        i = _wrapped(xp, i, x.shape[axis])
        return xp.take_along_axis(x, i, axis=axis)
    return gather


@lowers("Shape", "Size", "ConstantOfShape", "Range", "EyeLike")
def _from_shapes(ins, L):
    """Results that follow from static shapes or literal inputs: computed once, uploaded."""
    op = get_op(ins.op)
    value = None
    try:
        value = op.static_value(ins.attrs, [i.shape for i in ins.inputs])
    except Exception:  # noqa: BLE001
        value = None
    if value is None and all(i.op == LITERAL for i in ins.inputs):
        value = op.compute(ins.attrs, *[i.value for i in ins.inputs])
    if value is None:
        return None
    dev = L.backend.to_device(np.asarray(value).astype(ins.shape.dtype))
    return lambda *args: dev


@lowers("Trilu")
def _trilu(ins, L):
    xp = L.xp
    upper = int(ins.attrs.get("upper", 1))
    k_lit = literal_of(ins, 1)
    k_attr = ins.attrs.get("k")
    k = int(k_lit.reshape(-1)[0]) if k_lit is not None else (int(k_attr) if k_attr is not None else 0)
    if len(ins.inputs) > 1 and k_lit is None:
        return None
    return lambda x, *rest: xp.triu(x, k) if upper else xp.tril(x, k)
