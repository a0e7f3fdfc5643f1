"""The CPU target's rewrites, run on each cpu root after the shared simplifications.

- ``FoldBatchNorm`` (shared, ``compiler.passes.fold_batchnorm``): an inference BatchNormalization
  after a Conv with literal weights (and nothing else reading the Conv) is folded into the Conv's
  weights and bias; any other becomes a multiply and an add, which pointwise fusion takes in.
- ``FuseConvChain`` (shared, ``compiler.passes.fuse_conv_epilogue``): Conv [→ Add(residual)]
  [→ Relu | Clip | x·Sigmoid(x) | HardSwish] becomes one ``fused_conv`` whose kernel adds the
  bias and residual and clamps in place on the matmul result (no extra passes over memory, no
  temporaries). Clip takes literal bounds only (MobileNet's ReLU6).
- ``FusePointwise``: a tree of element-wise instructions whose inner results have no other
  reader becomes one ``FusedPointwise`` (one compiled loop, or NumPy steps into kept buffers).
"""
from __future__ import annotations

from compiler.passes.rewrite import substitute

from . import ops  # noqa: F401  (registers FusedPointwise)
from .kernels.pointwise import fusible


class FusePointwise:
    name = "cpu_fuse_pointwise"

    def apply(self, mpm) -> None:
        module = mpm.module
        taken: set = set()
        for root in reversed(list(module.instructions)):
            if root in taken or not fusible(root):
                continue
            group = _tree_above(root, module)
            taken |= group
            if len(group) > 1:
                substitute(module, root, _fused(module, root, group))


def _tree_above(root, module) -> set:
    """``root`` and the element-wise instructions above it whose only reader is in the tree."""
    group, stack = {root}, [root]
    while stack:
        for i in stack.pop().inputs:
            if i not in group and i.module is module and fusible(i) and set(i.users) <= group:
                group.add(i)
                stack.append(i)
    return group


def _fused(module, root, group):
    ordered = [i for i in module.instructions if i in group]
    inputs = list(dict.fromkeys(i for ins in ordered for i in ins.inputs if i not in group))
    position = {ins: len(inputs) + k for k, ins in enumerate(ordered)}
    position.update((ins, k) for k, ins in enumerate(inputs))
    steps = [[ins.op, dict(ins.attrs), [position[i] for i in ins.inputs]] for ins in ordered]
    return module.add_instruction("FusedPointwise", inputs, attrs={"steps": steps}, before=root,
                                  name=root.name, shape=root.shape)


def cpu_rewrites() -> list:
    from compiler.passes.conv_transpose_as_conv import ConvTransposeAsConv
    from compiler.passes.dead_code_elimination import DeadCodeElimination
    from compiler.passes.fold_batchnorm import FoldBatchNorm
    from compiler.passes.fold_pad_into_conv import FoldPadIntoConv
    from compiler.passes.fuse_conv_epilogue import FuseConvChain
    from compiler.passes.gather_rearrangements import GatherRearrangements
    return [ConvTransposeAsConv(), FoldPadIntoConv(), GatherRearrangements(), DeadCodeElimination(),
            FoldBatchNorm(), FuseConvChain(), FusePointwise(), DeadCodeElimination()]
