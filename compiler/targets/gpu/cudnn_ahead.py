"""cuDNN plans built ahead: before a GPU root is lowered, the cuDNN convolution graphs its
lowering will ask for start building on worker threads (``kernels.cudnn_backend.build_ahead``),
so their runtime compiles run side by side while the lowering goes on; the lowering takes a
convolution whose plan is still building after the rest of the module (``building``), and each
plan when it reaches that convolution (``kernels.conv.CudnnConv``).

The graphs are the ones the convolution lowering (``ops_nn._conv``) plans: the split-bf16 graph
of an fp32 convolution whose planned paths (``conv_choice.planned_paths``) include split-cudnn,
the graph itself where they include exact cuDNN, and every fp16 convolution's graph (its input
channels padded as the lowering pads them, ``conv_pad_channels``). A plan already kept on disk is
not built again (loading it takes milliseconds).
"""
from __future__ import annotations

import os

from . import conv_choice, conv_pad_channels, conv_split, depthwise_conv, ops_nn
from .kernels import conv as convk
from .kernels import cudnn_backend


def graphs_for(spec, options) -> list:
    """The cuDNN graph specs the lowering of convolution ``spec`` will build."""
    if depthwise_conv.applies(spec):
        return []
    names = ops_nn.fp32_paths(spec, on_gpu=True)
    if names:
        paths = conv_choice.planned_paths(spec, names, options)
        out = [conv_split.cudnn_spec(spec)] if "split-cudnn" in paths else []
        if "cudnn" in paths:        # fp32_paths names it only where cuDNN takes the spec
            out.append(spec)
        return out
    return [conv_pad_channels.padded(spec)] if ops_nn.cudnn_ok(spec) else []


def wanted(module, options) -> list:
    """The distinct cuDNN graph specs ``module``'s convolutions will ask for, in program order."""
    specs: dict = {}
    for ins in module.instructions:
        if ins.op in ("Conv", "fused_conv"):
            spec = ops_nn.lowered_conv_spec(ins, on_gpu=True)
            if spec is not None:
                specs.update(dict.fromkeys(graphs_for(spec, options)))
    return list(specs)


def building(ins, options) -> bool:
    """Whether a plan convolution ``ins`` will ask for is still being built ahead (the lowering
    takes such a convolution after the rest, instead of waiting for it first)."""
    if ins.op not in ("Conv", "fused_conv") or not cudnn_backend.any_building():
        return False    # (a warm compile builds nothing ahead: no convolution's graphs to derive)
    spec = ops_nn.lowered_conv_spec(ins, on_gpu=True)
    return spec is not None and any(cudnn_backend.building(s) for s in graphs_for(spec, options))


def _to_build(spec, options) -> bool:
    if convk.built(spec, options) or not convk.backend_builds(spec, options):
        return False
    path = convk.blob_path(spec, options, backend=True)
    return path is None or not os.path.exists(path)


def start(module, device_id: int, options) -> int:
    """Start building the plans ``module`` will want and no cache holds; returns how many."""
    if not convk.backend_builds(None, options) or convk.cudnn_module() is None:
        return 0
    try:
        cudnn_backend.library()
    except cudnn_backend.CudnnError:
        return 0
    return cudnn_backend.build_ahead([s for s in wanted(module, options) if _to_build(s, options)], device_id,
                                     options.tf32)
