"""The gpu target's lowering stage, step by step: what runs after the pass list, in order.

The pass list (``GpuTarget.passes``) rewrites the program; these steps turn a root into device
calls and rewrite those. ``GpuTarget.pipeline(options)`` prints both lists, so the whole pipeline
is visible in one place; ``GpuRoot`` runs the root-level steps from ``ROOT_STEPS`` and each
module's steps from ``MODULE_STEPS``, so the list is what runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class LoweringStep:
    name: str
    what: str
    run: Callable

    def __str__(self) -> str:
        return f"{self.name}: {self.what}"


def _build_ahead(gpu_root) -> None:
    """On a GPU: split-bf16 kernels, the root's depthwise and grouped kernel variants
    (``kernels_ahead``) and its cuDNN plans (``cudnn_ahead``) started on worker threads, before
    any instruction is lowered."""
    backend, root, options = gpu_root.backend, gpu_root.root, gpu_root.lowering.options
    if not backend.on_gpu:
        return
    device = backend.xp.cuda.Device().id
    if options.fp32_split and any(ins.op in ("Conv", "fused_conv", "MatMul", "Gemm")
                                  and getattr(ins.shape, "dtype", None) == "float32" for ins in root.instructions):
        from .kernels.split_bf16 import prepare
        prepare(device)
    from . import cudnn_ahead, kernels_ahead
    kernels_ahead.start(root, options)      # first: cuDNN's builds hold the GIL, NVRTC does not
    cudnn_ahead.start(root, device, options)


def _concat_chains(gpu_root) -> None:
    gpu_root.lowering.concat_chains(gpu_root.root)


def _lower(gpu_root) -> None:
    from .executor import LoweredModule
    gpu_root.body = LoweredModule(gpu_root.root, gpu_root.lowering)


def _memory_plan(gpu_root) -> None:
    from . import memory
    gpu_root.plan = memory.plan(gpu_root.root, gpu_root.lowering.concat_chains(gpu_root.root),
                                outside=gpu_root.body.written_in_place)


def _split_prologues(lowered) -> None:
    from . import split_prologue
    if lowered.lowering.backend.on_gpu and not any(i.module_inputs for i in lowered.module.instructions):
        # Bodies read outer values the steps do not list: only modules without them.
        lowered.deferred = split_prologue.defer_split_producers(lowered.steps, lowered.returned)


def _outputs_in_place(lowered) -> None:
    from .outputs_in_place import write_outputs_in_place
    lowered.written_in_place = write_outputs_in_place(lowered.steps, lowered.returned,
                                                      lowered.lowering.backend)


BUILD_AHEAD = LoweringStep("build_ahead", "start the root's cuDNN plans, split-bf16 kernels and "
                           "depthwise and grouped kernel variants on worker threads before lowering",
                           _build_ahead)
CONCAT_CHAINS = LoweringStep("concat_chains", "find concatenations that extend one another: "
                             "they fill one buffer", _concat_chains)
LOWER = LoweringStep("lower", "each instruction to a device call (``lowering.LOWERINGS``); fp32 "
                     "convolutions choose their path here (``conv_choice``), convolutions whose plan "
                     "is still building are lowered last", _lower)
MEMORY_PLAN = LoweringStep("memory_plan", "liveness plan of the root's buffers (its peak; results "
                           "written in place live in the caller's buffers)", _memory_plan)
SPLIT_PROLOGUES = LoweringStep("split_prologues", "per lowered module: a pointwise result only a "
                               "split convolution reads is computed inside its split", _split_prologues)
OUTPUTS_IN_PLACE = LoweringStep("outputs_in_place", "per lowered module: a result whose producer "
                                "takes ``out=`` is written straight into its output parameter, "
                                "not copied there", _outputs_in_place)

ROOT_STEPS = (BUILD_AHEAD, CONCAT_CHAINS, LOWER, MEMORY_PLAN)
MODULE_STEPS = (SPLIT_PROLOGUES, OUTPUTS_IN_PLACE)


def steps() -> list[LoweringStep]:
    """Every step in the order it runs (the module steps run inside ``lower``, per module)."""
    return [BUILD_AHEAD, CONCAT_CHAINS, LOWER, *MODULE_STEPS, MEMORY_PLAN]
