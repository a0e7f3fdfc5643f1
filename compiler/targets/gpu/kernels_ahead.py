"""Our kernels' variants compiled ahead: before a GPU root is lowered, the depthwise and grouped
convolution kernels its convolutions will launch start compiling on worker threads
(``kernels.raw_source.compile_ahead``), side by side, while the lowering goes on.

Each such variant is its own NVRTC compile (window, strides, epilogue and vector widths are
compile-time), 0.1-0.6 s cold each. Asked for at first launch they ran one after another: in a
cold process on the H100, ResNeXt-50's seven grouped variants took 4.0 s of its fp32 compile (the
path timing launches them), MobileNet-V3-Large's eight depthwise variants 1.8 s of its first fp16
run. The variants are the ones the convolution lowering (``ops_nn._planned_conv``) makes: a
depthwise convolution's kernel always, a grouped fp32 one's where its planned paths include the
grouped kernel (``conv_choice.planned_paths``). A variant whose arrays turn out less aligned than
fresh buffers compiles at its launch, as before.
"""
from __future__ import annotations

from . import conv_choice, depthwise_conv, grouped_conv, ops_nn
from .kernels import depthwise, grouped


def start(module, options) -> int:
    """Start compiling the kernel variants ``module``'s convolutions will launch; returns how many
    were asked for (a variant compiled already in this process is not compiled again)."""
    asked = 0
    for ins in module.instructions:
        if ins.op not in ("Conv", "fused_conv"):
            continue
        spec = ops_nn.lowered_conv_spec(ins, on_gpu=True)
        if spec is None:
            continue
        if depthwise_conv.applies(spec):
            depthwise.compile_ahead(spec, depthwise_conv.activation_of(spec, ins.attrs),
                                    depthwise_conv.prologue_of(ins.attrs))
            asked += 1
        elif grouped_conv.applies(spec) and "grouped" in conv_choice.planned_paths(
                spec, ops_nn.fp32_paths(spec, on_gpu=True), options):
            grouped.compile_ahead(spec, depthwise_conv.activation_of(spec, ins.attrs))
            asked += 1
    return asked
