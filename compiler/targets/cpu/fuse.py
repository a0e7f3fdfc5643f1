"""The CPU target's rewrites, run on each cpu root after the shared simplifications.

- ``FoldBatchNorm``: an inference BatchNormalization right after a Conv with literal weights
  (and nothing else reading the Conv) is folded into the Conv's weights and bias.
- ``FuseConvEpilogue``: Conv [→ Add(residual)] [→ Relu | Clip | x·Sigmoid(x) | HardSwish] becomes one ``FusedConv`` whose
  kernel adds the bias and residual and clamps in place on the matmul result (no extra passes
  over memory, no temporaries). Clip takes literal bounds only (MobileNet's ReLU6).
- ``FusePointwise``: a tree of element-wise instructions whose inner results have no other
  reader becomes one ``FusedPointwise`` (one compiled loop, or NumPy steps into kept buffers).
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.passes.rewrite import substitute

from . import ops  # noqa: F401  (registers FusedConv, FusedPointwise)
from .kernels.pointwise import fusible


def _single_user(ins, op: str):
    return ins.users[0] if len(ins.users) == 1 and ins.users[0].op == op else None


def _literal(ins) -> np.ndarray | None:
    return ins.value if ins.op == LITERAL else None


class FoldBatchNorm:
    name = "cpu_fold_batchnorm"

    def apply(self, mpm) -> None:
        module = mpm.module
        for conv in [i for i in module.instructions if i.op == "Conv"]:
            bn = _single_user(conv, "BatchNormalization")
            if bn is None or bn.attrs.get("training_mode") or bn.inputs[0] is not conv:
                continue
            w = _literal(conv.inputs[1])
            b = _literal(conv.inputs[2]) if len(conv.inputs) > 2 else np.zeros(w.shape[0] if w is not None else 0)
            stats = [_literal(i) for i in bn.inputs[1:5]]
            if w is None or b is None or any(s is None for s in stats):
                continue
            scale, shift, mean, var = (s.astype(np.float64) for s in stats)
            factor = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
            dtype = w.dtype
            # The per-channel factor in float64, the weights multiplied in their own type: no
            # float64 copy of the whole weight tensor.
            per_channel = factor.astype(dtype).reshape(-1, *[1] * (w.ndim - 1))
            new_w = module.add_literal(w * per_channel, before=conv)
            new_b = module.add_literal(((b - mean) * factor + shift).astype(dtype), before=conv)
            folded = module.add_instruction("Conv", [conv.inputs[0], new_w, new_b], attrs=dict(conv.attrs),
                                            before=conv, name=conv.name)
            substitute(module, bn, folded)
            module.remove_instruction(conv)


class FuseConvEpilogue:
    name = "cpu_fuse_conv_epilogue"

    def apply(self, mpm) -> None:
        module = mpm.module
        for conv in [i for i in module.instructions if i.op == "Conv"]:
            if conv.module is not module or len(conv.inputs) < 2:
                continue
            last, residual, relu = conv, None, False
            add = _single_user(conv, "Add")
            if add is not None:
                other = add.inputs[1] if add.inputs[0] is conv else add.inputs[0]
                if other is not conv and other.shape == conv.shape == add.shape:
                    last, residual = add, other
            act = _single_user(last, "Relu")
            clip = _single_user(last, "Clip")
            swish = _swish_of(last) or _single_user(last, "HardSwish")
            if act is not None:
                last, relu = act, True
            elif clip is not None and not clip.attrs.get("dynamic") and len(clip.inputs) == 1:
                last = clip
            elif swish is not None:
                last = swish
            if last is conv:
                continue
            bias = conv.inputs[2] if len(conv.inputs) > 2 else module.add_literal(
                np.zeros(conv.shape.lens[1], dtype=conv.shape.dtype), before=conv)
            inputs = [conv.inputs[0], conv.inputs[1], bias] + ([residual] if residual is not None else [])
            # Goes where the last fused instruction was: the residual is defined by then.
            fused = module.add_instruction("FusedConv", inputs, before=last, name=conv.name,
                                           attrs={**conv.attrs, "relu": relu, **_clip_bounds(last),
                                                  **_swish_kind(last, swish)})
            substitute(module, last, fused)  # the rest of the chain is dead now: DCE removes it


def _swish_of(ins):
    """The Mul of ``ins * Sigmoid(ins)`` (SiLU) when those two are all that read ``ins``."""
    users = set(ins.users)
    sig = next((u for u in users if u.op == "Sigmoid"), None)
    mul = next((u for u in users if u.op == "Mul"), None)
    if sig is None or mul is None or users != {sig, mul} or set(sig.users) != {mul}:
        return None
    return mul if set(mul.inputs) == {ins, sig} and mul.shape == ins.shape else None


def _swish_kind(last, swish) -> dict:
    if last is not swish:
        return {}
    return {"hardswish": True} if swish.op == "HardSwish" else {"swish": True}


def _clip_bounds(ins) -> dict:
    if ins.op != "Clip":
        return {}
    return {"clip": [ins.attrs.get("min"), ins.attrs.get("max")]}


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
    from compiler.passes.dead_code_elimination import DeadCodeElimination
    return [FoldBatchNorm(), FuseConvEpilogue(), FusePointwise(), DeadCodeElimination()]
