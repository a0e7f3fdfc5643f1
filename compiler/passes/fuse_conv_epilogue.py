"""Fold the elementwise tail of a convolution into it, as one ``fused_conv`` instruction whose
kernel applies bias, residual and activation while it writes the result (cuDNN's epilogue on the
gpu, the BLAS product's in-cache pass on the cpu), so the result is written once.

``fused_conv(x, w[, b][, r])`` takes Conv's attributes and ``bias``, ``residual`` (which inputs
follow ``w``), ``relu``, and optionally ``clip`` (``[min, max]``, either may be None),
``swish`` (y * sigmoid(y)) or ``hardswish``, applied in that order after the residual; and
optionally ``prologue``, the same activation keys applied to ``x`` before it is convolved (the
gpu target's depthwise kernel takes the activation of the convolution before it that way).

Two matchers build it, for the two places a target's pipeline fuses convolutions:

- ``FuseConvEpilogue`` runs after pointwise fusion (gpu): the tail is a ``fused_pointwise``
  whose body is ``relu(conv + r)``, ``conv + r`` or ``relu(conv)``, reading the convolution (its
  only user) and, for the add, a residual of exactly the output's shape and type.
- ``FuseConvChain`` runs before pointwise fusion (cpu): Conv [-> Add(residual)] [-> Relu | Clip
  with literal bounds (ReLU6) | x * Sigmoid(x) | HardSwish], each step the only reader of the one
  before; a convolution without a bias gets a zero one (the kernel always adds one).

Batch norms were folded into the convolution before (``fold_batchnorm``).
"""
from __future__ import annotations

import numpy as np

from compiler.ir.shape import Shape
from compiler.ops.registry import Op, get_op, register_op
from compiler.passes.rewrite import only_user, substitute

FUSED_CONV = "fused_conv"


def _pattern(body: list[dict]):
    """(conv arg, residual arg or None) for a supported tail body, else None."""
    ops = [s["op"] for s in body]
    if ops == ["Relu"]:
        return body[0]["args"][0], None, True
    if ops in (["Add"], ["Add", "Relu"]):
        if ops == ["Add", "Relu"] and body[1]["args"] != ["t0"]:
            return None
        a, b = body[0]["args"]
        if not (a.startswith("x") and b.startswith("x")) or a == b:
            return None
        return (a, b, len(ops) == 2)
    return None


class FuseConvEpilogue:
    name = "fuse_conv_epilogue"

    def apply(self, mpm) -> None:
        module = mpm.module
        for tail in [i for i in module.instructions if i.op == "fused_pointwise"]:
            found = _pattern(tail.attrs["body"])
            if found is None:
                continue
            first, second, relu = found
            for conv_arg, res_arg in ((first, second), (second, first)):
                if conv_arg is None:
                    continue
                conv = tail.inputs[int(conv_arg[1:])]
                residual = tail.inputs[int(res_arg[1:])] if res_arg else None
                if self._fits(conv, tail, residual):
                    self._fuse(module, conv, tail, residual, relu)
                    break

    @staticmethod
    def _fits(conv, tail, residual) -> bool:
        if conv.op != "Conv" or conv.module is not tail.module or conv.users != [tail]:
            return False
        if conv.shape != tail.shape or conv.shape.ndim != 4:
            return False
        if residual is not None and (residual.shape != tail.shape or residual is conv):
            return False
        return True

    @staticmethod
    def _fuse(module, conv, tail, residual, relu):
        inputs = list(conv.inputs)
        attrs = dict(conv.attrs, bias=len(conv.inputs) > 2, residual=residual is not None, relu=relu)
        if residual is not None:
            inputs.append(residual)
        fused = module.add_instruction(FUSED_CONV, inputs, attrs, shape=tail.shape, before=tail,
                                       name=conv.name)
        module.replace_instruction(tail, fused)
        module.remove_instruction(tail)
        module.remove_instruction(conv)


class FuseConvChain:
    name = "fuse_conv_chain"

    def apply(self, mpm) -> None:
        module = mpm.module
        for conv in [i for i in module.instructions if i.op == "Conv"]:
            if conv.module is not module or len(conv.inputs) < 2:
                continue
            last, residual, relu = conv, None, False
            add = only_user(conv, "Add")
            if add is not None:
                other = add.inputs[1] if add.inputs[0] is conv else add.inputs[0]
                if other is not conv and other.shape == conv.shape == add.shape:
                    last, residual = add, other
            act = only_user(last, "Relu")
            clip = only_user(last, "Clip")
            swish = _swish_of(last) or only_user(last, "HardSwish")
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
            fused = module.add_instruction(FUSED_CONV, inputs, before=last, name=conv.name,
                                           attrs={**conv.attrs, "bias": True, "residual": residual is not None,
                                                  "relu": relu, **_clip_bounds(last), **_swish_kind(last, swish)})
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


@register_op
class FusedConv(Op):
    """Conv (+ bias) (+ residual) (+ ReLU, clip, SiLU or HardSwish); the reference is the ops it
    replaced."""

    name = FUSED_CONV

    def shape(self, attrs, inputs, literals):
        x = get_op("Conv").shape(attrs, inputs[:2], literals[:2])
        return Shape(x.dtype, x.lens)

    def compute(self, attrs, x, w, *rest):
        if attrs.get("prologue"):
            x = activate(attrs["prologue"], x)
        rest = list(rest)
        b = rest.pop(0) if attrs["bias"] else None
        y = get_op("Conv").compute(attrs, x, w, b)
        if attrs["residual"]:
            y = (y + rest.pop(0)).astype(y.dtype)
        return activate(attrs, y)


def activate(steps: dict, y):
    """``fused_conv``'s activation keys of ``steps`` (``relu``, ``clip``, ``swish``,
    ``hardswish``) applied to ``y`` in that order."""
    if steps.get("relu"):
        y = np.maximum(y, 0).astype(y.dtype)
    low, high = steps.get("clip") or (None, None)
    if low is not None:
        y = np.maximum(y, np.asarray(low).astype(y.dtype))
    if high is not None:
        y = np.minimum(y, np.asarray(high).astype(y.dtype))
    if steps.get("swish"):
        y = (y * (1 / (1 + np.exp(-y)))).astype(y.dtype)
    if steps.get("hardswish"):
        y = get_op("HardSwish").compute({}, y)
    return y
