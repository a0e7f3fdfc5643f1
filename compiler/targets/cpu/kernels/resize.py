"""Resize (and Upsample) with literal scales or sizes: the reference's per-axis sampling plan
(nearest indices, or the linear/cubic weight matrix, built by a Python loop over output indices)
worked out once at lowering; a run is one ``take`` or one ``tensordot`` per resized axis, the
same arithmetic in the same order as the reference."""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape
from compiler.ops.resize import nearest_index, output_plan, source_coords, weight_matrix


def resize_kernel(ins):
    a = ins.attrs
    x = ins.inputs[0].shape
    if a.get("dynamic") or not (isinstance(x, Shape) and x.static) or not ins.shape.static:
        return None
    lens = tuple(x.lens)
    out, scale, box, axes = output_plan(a, lens, a.get("roi"), a.get("scales"), a.get("sizes"))
    mode = a["coordinate_transformation_mode"]
    outside = np.zeros(out, dtype=bool) if mode == "tf_crop_and_resize" else None
    steps = []
    for axis in axes:
        coords = source_coords(mode, out[axis], lens[axis], scale[axis], box[axis])
        if outside is not None:
            bad = (coords < 0) | (coords > lens[axis] - 1)
            outside |= bad.reshape([-1 if k == axis else 1 for k in range(len(lens))])
        if a["mode"] == "nearest":
            index = np.clip(nearest_index(coords, a["nearest_mode"]), 0, lens[axis] - 1).astype(np.int64)
            steps.append((axis, index, None))
        else:
            steps.append((axis, None, weight_matrix(coords, lens[axis], a, scale[axis])))
    dtype = np.dtype(ins.shape.dtype)
    nearest = a["mode"] == "nearest"

    def run(value, *literal_inputs):
        y = value if nearest else value.astype(np.float64)
        for axis, index, weights in steps:
            if index is not None:
                y = np.take(y, index, axis=axis)
            else:
                y = np.moveaxis(np.tensordot(weights, np.moveaxis(y, axis, 0), axes=1), 0, axis)
        if outside is not None:
            y = np.where(outside, a["extrapolation_value"], y)
        return np.asarray(y).astype(dtype, copy=False)
    return run
