"""Softmax and LogSoftmax on the gpu target as ``kernels.softmax_rows``' one kernel where it takes
the instruction: fp32 or fp16, over the last axis, static shape. Any other axis or type keeps the
CuPy lowering."""
from __future__ import annotations

from .kernels import softmax_rows as kernel


def applies(ins) -> bool:
    x = ins.inputs[0].shape
    axis = int(ins.attrs.get("axis", -1))
    return (x.dtype in ("float32", "float16") and x.static and x.ndim >= 1 and axis in (-1, x.ndim - 1)
            and x.lens[-1] > 0)


def softmax_runner(xp, ins):
    """The runner of ``ins`` (``applies``): x -> softmax(x) (or log-softmax), packed."""
    width = ins.inputs[0].shape.lens[-1]
    log = ins.op == "LogSoftmax"

    def run(x):
        return kernel.softmax_rows(xp.ascontiguousarray(x), width, log)
    run.path = "softmax-rows"
    return run
