"""Fold SiLU (x * sigmoid(x)) after a GroupNormalization or InstanceNormalization into it, when
``norm_groups``' kernel will run it: UNet's GroupNorm -> SiLU is then one kernel writing the
activation once. Runs after pointwise fusion, so the SiLU is a ``fused_pointwise`` whose only
input is the norm. Never in emulation, where NumPy stands in for the kernel."""
from __future__ import annotations

from . import norm_groups
from .depthwise_epilogue import activation_step


def foldable(module):
    """(norm, its SiLU tail) for each tail this pass folds."""
    for tail in [i for i in module.instructions if i.op == "fused_pointwise" and len(i.inputs) == 1]:
        norm = tail.inputs[0]
        if activation_step(tail.attrs["body"]) == {"swish": True} and norm.module is module \
                and norm.users == [tail] and norm.shape == tail.shape and not norm.attrs.get("swish") \
                and norm_groups.applies(norm):
            yield norm, tail


class FuseNormSwish:
    """The pass; ``emulate`` (``GpuOptions.emulate``): no GPU kernel runs, so nothing is folded."""
    name = "fuse_norm_swish"

    def __init__(self, emulate: bool = False):
        self.emulate = emulate

    def apply(self, mpm) -> None:
        if self.emulate:
            return
        module = mpm.module
        for norm, tail in list(foldable(module)):
            fused = module.add_instruction(norm.op, list(norm.inputs), {**norm.attrs, "swish": True},
                                           shape=tail.shape, before=tail, name=norm.name)
            module.replace_instruction(tail, fused)
            module.remove_instruction(tail)
            module.remove_instruction(norm)
