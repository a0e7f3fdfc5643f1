"""RMSNorm as exporters write it made one RMSNormalization over the last axis:

    Pow(x, 2) (or x * x) -> ReduceMean(last axis, keepdims) -> Add(eps) -> Sqrt
        -> Reciprocal -> Mul(x, .)   or   -> Div(1, .) -> Mul(x, .)   or   -> Div(x, .)
    [-> Mul(weight of the last axis's length)]

becomes ``RMSNormalization(x, weight, axis=-1, epsilon=eps)`` (weight ones when absent). A chain
over another axis, with the epsilon elsewhere (added after the root), another power, or a middle
value with other users is left alone.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL

from .rewrite import ChainRecognizer, replace_chain


def _scalar(ins):
    """The value of a one-element literal, else None."""
    if ins.op != LITERAL or np.asarray(ins.value).size != 1:
        return None
    return float(np.asarray(ins.value).reshape(()))


def _other(binary, value):
    return binary.inputs[1] if binary.inputs[0] is value else binary.inputs[0]


def _sole(ins, *ops):
    """``ins``' one user if its op is one of ``ops`` (same module), else None."""
    if len(ins.users) == 1 and ins.users[0].op in ops and ins.users[0].module is ins.module:
        return ins.users[0]
    return None


def _squared(mean):
    """The x that ReduceMean ``mean``'s input squares, or None."""
    p = mean.inputs[0]
    if len(p.users) != 1 or len(p.inputs) != 2:
        return None
    if p.op == "Pow" and _scalar(p.inputs[1]) == 2.0:
        return p.inputs[0]
    if p.op == "Mul" and p.inputs[0] is p.inputs[1]:
        return p.inputs[0]
    return None


def _normalised(x, root):
    """The instruction computing x / ``root`` from Sqrt ``root``, or None."""
    user = _sole(root, "Reciprocal", "Div")
    if user is None:
        return None
    if user.op == "Div" and user.inputs[1] is root:
        if user.inputs[0] is x:
            return user
        if _scalar(user.inputs[0]) != 1.0:
            return None
    elif user.op == "Div":
        return None
    mul = _sole(user, "Mul")
    return mul if mul is not None and _other(mul, user) is x else None


def match(mean):
    """(x, epsilon, last instruction, weight) of the chain through ReduceMean ``mean``, or None."""
    x = _squared(mean)
    if x is None or not mean.attrs.get("keepdims") or mean.attrs.get("axes") != [x.shape.ndim - 1]:
        return None
    add = _sole(mean, "Add")
    eps = _scalar(_other(add, mean)) if add is not None else None
    root = _sole(add, "Sqrt") if eps is not None else None
    last = _normalised(x, root) if root is not None else None
    if last is None or last.shape.lens != x.shape.lens:
        return None
    width, weight = x.shape.lens[-1], np.ones(x.shape.lens[-1])
    scale = _sole(last, "Mul")
    if scale is not None:
        w = _other(scale, last)
        value = np.asarray(w.value) if w.op == LITERAL else None
        if value is not None and value.size == width and value.shape[-1:] == (width,) \
                and scale.shape.lens == x.shape.lens:
            last, weight = scale, value.reshape(-1)
    return x, eps, last, weight


def _replace(module, x, eps, last, weight):
    attrs = {"axis": x.shape.ndim - 1, "epsilon": eps, "stash_type": 1}
    replace_chain(module, last, "RMSNormalization", [x], attrs, literals=[weight])


def RecognizeRmsNorm() -> ChainRecognizer:  # noqa: N802 - a pass, named as the pass classes are
    return ChainRecognizer("recognize_rms_norm", "ReduceMean", match, _replace)
