"""``residual_norm`` (``compiler.passes.fuse_residual_norm``) on the gpu target: one kernel
(``kernels.residual_norm_rows``) for fp32 or fp16 rows with scale and bias of the data's type;
otherwise the Add and the norm's own lowering, one after the other."""
from __future__ import annotations

from compiler.passes.fuse_residual_norm import RESIDUAL_NORM

from .kernels import residual_norm_rows as kernel
from .lowering import lowers


def applies(ins) -> bool:
    x = ins.inputs[0].shape
    if x.dtype not in ("float32", "float16") or not x.static:
        return False
    return all(tuple(p.shape.lens) == (x.lens[-1],) and p.shape.dtype == x.dtype for p in ins.inputs[2:])


@lowers(RESIDUAL_NORM)
def _residual_norm(ins, L):
    eps = float(ins.attrs.get("epsilon", 1e-5))
    rms, with_sum = ins.attrs["norm"] == "RMSNormalization", bool(ins.attrs["with_sum"])
    xp = L.xp
    if L.backend.on_gpu and applies(ins):
        width = ins.inputs[0].shape.lens[-1]

        def run(a, b, scale, bias=None):
            a, b, scale, bias = (xp.ascontiguousarray(v) if v is not None else None for v in (a, b, scale, bias))
            return kernel.residual_norm_rows(a, b, width, scale, bias, eps, rms, with_sum)
        run.path = "residual-norm-rows"
        return run
    dtype = ins.inputs[0].shape.dtype
    acc = "float32" if dtype == "float16" else dtype

    def unfused(a, b, scale, bias=None):
        s = (a + b).astype(dtype, copy=False)
        v = s.astype(acc, copy=False)
        mean = 0.0 if rms else xp.mean(v, axis=-1, keepdims=True)
        d = v - mean
        y = d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + eps) * scale
        y = (y + bias if bias is not None else y).astype(dtype, copy=False)
        return (y, s) if with_sum else y
    return unfused
