"""Fold the activation before a depthwise convolution into it, when the depthwise kernel
(``depthwise_conv``) will run it: the inverted-residual block of MobileNet-V2/V3, EfficientNet
and MNASNet is expand convolution -> activation -> depthwise convolution, and the activation
(ReLU6, SiLU, HardSwish) after a cuDNN or GEMM convolution stays a separate ``fused_pointwise``
that writes the expanded tensor, the block's largest, once more and reads it again. The depthwise
kernel applies it to each element it reads instead (``fused_conv``'s ``prologue``), so the
expanded tensor is written once, by the convolution that makes it.

Only activations of a few arithmetic steps are folded (ReLU, clips, HardSwish). The kernel applies
the prologue to every element it reads, about ten times per output of a 5 x 5 window, and SiLU's
exponential and division there made the kernel bound by the special-function units: on the H200
EfficientNet-B0's depthwise convolutions (b32 fp16) took 1.71 ms a run with SiLU as their prologue
against 0.68 ms without, where the separate SiLU kernels cost 0.74 ms.

Runs after ``FuseDepthwiseEpilogue`` (a depthwise convolution's own activation is its epilogue)."""
from __future__ import annotations

from compiler.passes.fuse_conv_epilogue import FUSED_CONV

from . import depthwise_conv, ops_nn
from .depthwise_epilogue import FuseDepthwiseEpilogue, activation_step, conv_attrs


def _depthwise(conv) -> bool:
    """Whether ``conv`` lowers to the depthwise kernel and takes no prologue yet."""
    if conv.op not in ("Conv", FUSED_CONV) or conv.attrs.get("prologue"):
        return False
    spec = ops_nn.lowered_conv_spec(conv, on_gpu=True)
    return spec is not None and depthwise_conv.applies(spec)


def foldable(module):
    """(depthwise convolution, the activation tail it reads, the step) for each fold."""
    for conv in [i for i in module.instructions if i.op in ("Conv", FUSED_CONV)]:
        tail = conv.inputs[0]
        if tail.op != "fused_pointwise" or len(tail.inputs) != 1 or tail.module is not module:
            continue
        step = activation_step(tail.attrs["body"])
        if not step or step.get("swish") or tail.users != [conv] or tail.shape != tail.inputs[0].shape:
            continue
        if _depthwise(conv):
            yield conv, tail, step


class FuseDepthwisePrologue(FuseDepthwiseEpilogue):
    """The pass; ``emulate`` (``GpuOptions.emulate``): no GPU kernel runs, so nothing is folded."""
    name = "fuse_depthwise_prologue"
    foldable = staticmethod(foldable)

    @staticmethod
    def fuse(module, conv, tail, step):
        fused = module.add_instruction(FUSED_CONV, [tail.inputs[0], *conv.inputs[1:]],
                                       {**conv_attrs(conv), "prologue": step}, shape=conv.shape, before=conv,
                                       name=conv.name)
        module.replace_instruction(conv, fused)
        module.remove_instruction(conv)
        module.remove_instruction(tail)
