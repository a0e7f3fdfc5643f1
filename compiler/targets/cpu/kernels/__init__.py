"""Kernel choice for the CPU target: a fast kernel where one exists for the instruction's
shapes, else the op's reference computation. Factories run once per instruction at lowering
and return the callable that runs it; they return None to decline (odd dtype, dynamic shape)."""
from __future__ import annotations

from compiler.targets.ref.plan import reference_kernel
from .conv import conv_kernel, fused_conv_kernel
from .einsum import einsum_kernel
from .erf import erf_kernel
from .matmul import matmul_kernel
from .pool import maxpool_kernel

FAST = {
    "Conv": conv_kernel,
    "FusedConv": fused_conv_kernel,
    "MaxPool": maxpool_kernel,
    "Einsum": einsum_kernel,
    "Erf": erf_kernel,
    "MatMul": matmul_kernel,
}


def pick_kernel(ins):
    factory = FAST.get(ins.op)
    kernel = factory(ins) if factory else None
    return kernel or reference_kernel(ins)
