"""``fused_linear`` (``passes.fuse_linear_epilogue``) on the gpu target: one cuBLASLt GEMM whose
epilogue adds the bias and applies GELU, or adds the bias and the residual, in fp16/bf16
(``kernels.gemm_lt_half``). ``takes`` is the pass's choice: fp16/bf16 linears where cuBLASLt is
there (or the device is emulated, for the tests of the plumbing); fp32 keeps its exact path."""
from __future__ import annotations

import math

from .kernels import gemm_lt_half
from .lowering import lowers


def takes(dtype: str, emulate: bool) -> bool:
    """Whether a linear layer of this type becomes ``fused_linear`` (``emulate``: the device is
    emulated, so the plumbing is tested without cuBLASLt)."""
    if dtype not in ("float16", "bfloat16"):
        return False
    return emulate or gemm_lt_half.supported(dtype)


@lowers("fused_linear")
def _fused_linear(ins, L):
    x, w = ins.inputs[0].shape, ins.inputs[1].shape
    dtype = ins.shape.dtype
    if not L.backend.on_gpu or not x.static or not gemm_lt_half.supported(dtype):
        return None     # the reference computation
    k, n = w.lens
    m = math.prod(x.lens[:-1])
    chosen = gemm_lt_half.plan_of(m, k, n, dtype, bool(ins.attrs["gelu"]))
    if chosen is None:
        return None
    xp, lens = L.xp, tuple(ins.shape.lens)

    def run(x, w, b, r=None):
        a = xp.ascontiguousarray(x).reshape(m, k)
        bias = b.reshape(-1)
        res = None if r is None else xp.ascontiguousarray(r).reshape(m, n)
        y = gemm_lt_half.linear(chosen, a, w, bias, res)
        if y is None:       # a view off the 256-byte alignment cuBLASLt's plan assumes: copies are on it
            y = gemm_lt_half.linear(chosen, a.copy(), w.copy(), bias.copy(), None if res is None else res.copy())
        return y.reshape(lens)
    run.capturable = True
    run.path = "lt-linear-gelu" if ins.attrs["gelu"] else "lt-linear"
    return run
