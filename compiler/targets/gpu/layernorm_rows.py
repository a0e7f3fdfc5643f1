"""LayerNormalization on the gpu target as ``kernels.layernorm_rows``' one kernel, where it
takes the instruction: fp32 or fp16, normalised over the last axis, scale and bias of that
axis's length (or absent). Others keep the CuPy lowering."""
from __future__ import annotations

from .kernels import layernorm_rows as kernel


def applies(ins) -> bool:
    x = ins.inputs[0].shape
    axis = int(ins.attrs.get("axis", -1))
    if x.dtype not in ("float32", "float16") or not x.static or axis not in (-1, x.ndim - 1):
        return False
    width = x.lens[-1]
    return all(tuple(v.shape.lens) == (width,) and v.shape.dtype == x.dtype for v in ins.inputs[1:3])


def layernorm_runner(xp, ins):
    """The runner of ``ins`` (``applies``): (x[, scale][, bias]) -> y, packed."""
    width = ins.inputs[0].shape.lens[-1]
    eps = float(ins.attrs.get("epsilon", 1e-5))

    def run(x, scale=None, bias=None):
        x, scale, bias = (xp.ascontiguousarray(v) if v is not None else None for v in (x, scale, bias))
        return kernel.layernorm_rows(x, width, scale, bias, eps)
    run.path = "layernorm-rows"
    return run
