"""Fold the activation after a depthwise convolution into it, when the depthwise kernel
(``depthwise_conv``) will run it: a ``fused_pointwise`` tail that is only ReLU6/Clip, SiLU
(x * sigmoid(x)) or HardSwish of the convolution becomes ``fused_conv``'s ``clip``, ``swish`` or
``hardswish`` step, so MobileNet's and EfficientNet's depthwise outputs are written once instead
of written, read and written again. The shared ``FuseConvEpilogue`` folds ReLU only, since cuDNN's
graphs here apply nothing else; this pass runs after it and touches only convolutions the kernel
takes, so no other path ever sees these steps."""
from __future__ import annotations

from compiler.passes.fuse_conv_epilogue import FUSED_CONV

from . import depthwise_conv, ops_nn

_LATER_STEPS = ("clip", "swish", "hardswish")


def activation_step(body: list[dict]) -> dict | None:
    """The ``fused_conv`` attributes for a tail body applying one activation to its only input."""
    ops = [s["op"] for s in body]
    if ops == ["Relu"] and body[0]["args"] == ["x0"]:
        return {"relu": True}
    if ops == ["Clip"] and body[0]["args"] == ["x0"]:
        a = body[0]["attrs"]
        return {"clip": [a.get("min"), a.get("max")]}
    if ops == ["HardSwish"] and body[0]["args"] == ["x0"]:
        return {"hardswish": True}
    if ops == ["Sigmoid", "Mul"] and body[0]["args"] == ["x0"] and sorted(body[1]["args"]) == ["t0", "x0"]:
        return {"swish": True}
    return None


def kernel_takes(conv) -> bool:
    """Whether ``conv`` (Conv or fused_conv, no step after ReLU yet) lowers to the depthwise
    kernel (on a GPU: emulation, where NumPy stands in and only ReLU is applied, runs no pass)."""
    if conv.op not in ("Conv", FUSED_CONV) or any(conv.attrs.get(k) for k in _LATER_STEPS):
        return False
    spec = ops_nn.lowered_conv_spec(conv, on_gpu=True)
    return spec is not None and depthwise_conv.applies(spec)


def foldable(module):
    """(convolution, its activation tail, the step) for each tail this pass folds."""
    tails = [i for i in module.instructions if i.op == "fused_pointwise" and len(i.inputs) == 1]
    for tail in tails:
        step, conv = activation_step(tail.attrs["body"]), tail.inputs[0]
        if step and conv.module is module and conv.users == [tail] and conv.shape == tail.shape \
                and kernel_takes(conv):
            yield conv, tail, step


def conv_attrs(conv) -> dict:
    """``conv``'s attributes as a ``fused_conv``'s (a plain Conv gets the epilogue keys, off)."""
    attrs = dict(conv.attrs)
    if conv.op == "Conv":
        attrs.update(bias=len(conv.inputs) > 2, residual=False, relu=False)
    return attrs


class FuseDepthwiseEpilogue:
    """The pass; ``emulate`` (``GpuOptions.emulate``): no GPU kernel runs, so nothing is folded."""
    name = "fuse_depthwise_epilogue"
    foldable = staticmethod(foldable)

    def __init__(self, emulate: bool = False):
        self.emulate = emulate

    def apply(self, mpm) -> None:
        if self.emulate:
            return
        for conv, tail, step in list(self.foldable(mpm.module)):
            self.fuse(mpm.module, conv, tail, step)

    @staticmethod
    def fuse(module, conv, tail, step):
        fused = module.add_instruction(FUSED_CONV, list(conv.inputs), {**conv_attrs(conv), **step}, shape=tail.shape,
                                       before=tail, name=conv.name)
        module.replace_instruction(tail, fused)
        module.remove_instruction(tail)
        module.remove_instruction(conv)
