"""Kernel choice for the CPU target: a fast kernel where one exists for the instruction's
shapes, else the op's reference computation. Factories run once per instruction at lowering
and return the callable that runs it; they return None to decline (odd dtype, dynamic shape)."""
from __future__ import annotations

from compiler.targets.ref.plan import reference_kernel
from .conv import conv_kernel, fused_conv_kernel
from .einsum import einsum_kernel
from .gather import gather_kernel
from .gemm import gemm_kernel
from .layout import (RELABELS, cast_kernel, concat_kernel, reduce_kernel, relabel_kernel, slice_kernel,
                     transpose_kernel)
from .matmul import matmul_kernel
from .nms import nms_kernel
from .norm import layernorm_kernel, softmax_kernel
from .pointwise import OPS as POINTWISE_OPS, fused_pointwise_kernel, pointwise_kernel
from .pool import averagepool_kernel, global_averagepool_kernel, maxpool_kernel
from .resize import resize_kernel
from .rnn import rnn_kernel

FAST = {
    **{op: pointwise_kernel for op in POINTWISE_OPS},
    **{op: relabel_kernel for op in RELABELS},
    "FusedPointwise": fused_pointwise_kernel,
    "Transpose": transpose_kernel,
    "Cast": cast_kernel,
    "CastLike": cast_kernel,
    "Slice": slice_kernel,
    "Concat": concat_kernel,
    "ReduceMean": reduce_kernel,
    "ReduceSum": reduce_kernel,
    "Conv": conv_kernel,
    "fused_conv": fused_conv_kernel,
    "MaxPool": maxpool_kernel,
    "AveragePool": averagepool_kernel,
    "GlobalAveragePool": global_averagepool_kernel,
    "Einsum": einsum_kernel,
    "MatMul": matmul_kernel,
    "Gemm": gemm_kernel,
    "Gather": gather_kernel,
    "LayerNormalization": layernorm_kernel,
    "Softmax": softmax_kernel,
    "Resize": resize_kernel,
    "NonMaxSuppression": nms_kernel,
    "Upsample": resize_kernel,
    "LSTM": rnn_kernel,
    "GRU": rnn_kernel,
}


def pick_kernel(ins):
    factory = FAST.get(ins.op)
    kernel = factory(ins) if factory else None
    return kernel or reference_kernel(ins)
