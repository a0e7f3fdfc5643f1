"""RMSNormalization on the gpu target: ``kernels.rms_rows``' one kernel for fp32 or fp16 data
normalised over the last axis with a scale of that axis's length (of the data's type or fp32);
otherwise CuPy, statistics in fp32, as the reference computes them."""
from __future__ import annotations

from .kernels import rms_rows as kernel
from .lowering import lowers

ACC = {"float16": "float32"}


def applies(ins) -> bool:
    x = ins.inputs[0].shape
    if x.dtype not in ("float32", "float16") or not x.static or x.ndim < 1:
        return False
    if int(ins.attrs.get("axis", -1)) not in (-1, x.ndim - 1) or len(ins.inputs) != 2:
        return False
    scale = ins.inputs[1].shape
    return tuple(scale.lens) == (x.lens[-1],) and scale.dtype in (x.dtype, "float32")


@lowers("RMSNormalization")
def _rms_norm(ins, L):
    xp = L.xp
    eps = float(ins.attrs.get("epsilon", 1e-5))
    rank = ins.inputs[0].shape.ndim
    axis = int(ins.attrs.get("axis", -1))
    axes = tuple(range(axis + rank if axis < 0 else axis, rank))
    dtype = ins.shape.dtype
    if L.backend.on_gpu and applies(ins):
        width = ins.inputs[0].shape.lens[-1]

        def run(x, scale):
            return kernel.rms_rows(xp.ascontiguousarray(x), width, xp.ascontiguousarray(scale), eps)
        run.path = "rms-rows"
        return run

    def rms(x, scale):
        xf = x.astype(ACC.get(dtype, dtype), copy=False)
        y = xf / xp.sqrt(xp.mean(xf * xf, axis=axes, keepdims=True) + eps) * scale
        return y.astype(dtype, copy=False)
    return rms
