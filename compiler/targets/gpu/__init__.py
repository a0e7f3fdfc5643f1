"""The GPU target: CuPy arrays, generated fused kernels, cuBLAS GEMMs, cuDNN convolutions.

``passes`` builds the pass list without touching a device (CI checks the structure it produces on
machines without a GPU); ``lower`` imports CuPy and prepares the root's device calls through the
steps of ``lowering_steps``; ``pipeline`` lists both, in order.
"""
from __future__ import annotations

import numpy as np

from compiler.targets.base import Target


class GpuTarget(Target):
    name = "gpu"
    host = False

    def passes(self, options) -> list:
        from compiler.passes.conv_transpose_as_conv import ConvTransposeAsConv
        from compiler.passes.fold_batchnorm import FoldBatchNorm
        from compiler.passes.fold_pad_into_conv import FoldPadIntoConv
        from compiler.passes.fuse_pointwise import FusePointwise
        from compiler.passes.pipelines import device_passes
        from compiler.passes.fuse_conv_epilogue import FuseConvEpilogue
        # Transposed convolutions become convolutions (one over the spread input takes a batch norm
        # after it), and a zero Pad before a convolution its padding (the gather copy goes); batch
        # norms fold in float32 first; fp16 then rounds the folded weights once.
        lowering = [ConvTransposeAsConv(), FoldPadIntoConv(), FoldBatchNorm()]
        if options.fp16:
            from compiler.passes.quantize_fp16 import QuantizeFp16
            lowering.append(QuantizeFp16())
        from compiler.passes.collapse_view_chains import CollapseViewChains
        from compiler.passes.dead_code_elimination import DeadCodeElimination
        from compiler.passes.einsum_as_matmul import EinsumAsMatMul
        from compiler.passes.fuse_attention import FuseAttention
        from compiler.passes.gather_rearrangements import GatherRearrangements
        from compiler.passes.fuse_linear_epilogue import FuseLinearEpilogue
        from compiler.passes.recognize_group_norm import RecognizeGroupNorm
        from compiler.passes.recognize_interleave import RecognizeInterleave
        from compiler.passes.fuse_residual_norm import FuseResidualNorm
        from compiler.passes.merge_sibling_products import MergeSiblingProducts
        from compiler.passes.recognize_rms_norm import RecognizeRmsNorm
        from compiler.passes.recognize_rotary import RecognizePartialRotary, RecognizeRotary

        from . import linear_epilogue
        from .attention import takes
        from .depthwise_epilogue import FuseDepthwiseEpilogue
        from .depthwise_prologue import FuseDepthwisePrologue
        from .fuse_norm_swish import FuseNormSwish
        from .options import GpuOptions
        gpu = GpuOptions.of(options)
        # Attention is recognised on the exporter's own ops (a grouped-query repeat is plain
        # there; products written as Einsums are MatMuls first), then a rearrangement that would
        # copy more than once (a roll, then window partition) becomes one gather of rows, and
        # movement chains become views of their sources, attention's operands too;
        # a channel shuffle after a concatenation, a chain that must copy, becomes an interleave.
        # Norms, rotary embeddings and attention are recognised before pointwise fusion swallows
        # their pieces; a residual Add goes into a linear layer's GEMM where one produces it (one
        # pass fewer than folding it into the norm after), else into the norm. The chains a
        # rewrite replaced are removed before the next rewrite counts a value's readers. Products
        # of one input by several weights (query/key/value, gate/up) become one wide GEMM before
        # the epilogues.
        lowering += [EinsumAsMatMul(), FuseAttention(takes), DeadCodeElimination(), GatherRearrangements(),
                     DeadCodeElimination(), CollapseViewChains(), DeadCodeElimination(),
                     RecognizeInterleave(), RecognizeGroupNorm(), RecognizeRmsNorm(), RecognizeRotary(),
                     MergeSiblingProducts(), DeadCodeElimination(), RecognizePartialRotary(),
                     FuseLinearEpilogue(lambda dtype: linear_epilogue.takes(dtype, gpu.emulate)),
                     DeadCodeElimination(), FuseResidualNorm(), FusePointwise(), FuseConvEpilogue(),
                     FuseDepthwiseEpilogue(gpu.emulate), FuseDepthwisePrologue(gpu.emulate),
                     FuseNormSwish(gpu.emulate)]
        return device_passes(self.name, options, lowering=lowering)

    def lowering_steps(self, options) -> list:
        """The lowering stage's steps (``lowering_steps``), in the order they run after the passes."""
        from .lowering_steps import steps
        return steps()

    def pipeline(self, options) -> list[str]:
        """The whole pipeline as text: each pass's name, then each lowering step with what it does
        (``print("\n".join(target.pipeline(options)))``)."""
        return ([f"pass {getattr(p, 'name', type(p).__name__)}" for p in self.passes(options)]
                + [f"lowering {s}" for s in self.lowering_steps(options)])

    def lower(self, program, root, options, context):
        from . import backend
        from .executor import GpuRoot
        from .options import GpuOptions
        gpu = GpuOptions.of(options)
        return GpuRoot(program, root, gpu, context, backend.load(gpu.emulate))

    def supports(self, ins) -> bool:
        return True

    # ----- memory: device arrays are CuPy arrays -----------------------------------------------
    def to_device(self, array):
        from . import backend
        return backend.load().to_device(np.asarray(array) if isinstance(array, np.ndarray) else array)

    def from_device(self, value):
        from . import backend
        return backend.load().to_host(value)

    def allocate(self, shape):
        from . import backend
        return backend.load().xp.empty(tuple(shape.lens), dtype=shape.dtype)

    def copy_into(self, src, dst):
        dst[...] = src
        return dst


def make_target() -> GpuTarget:
    return GpuTarget()
