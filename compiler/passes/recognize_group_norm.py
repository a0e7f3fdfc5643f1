"""GroupNorm as exported by PyTorch at opset 17 made one GroupNormalization again:

    Reshape(x, [N, G, -1]) -> InstanceNormalization(ones(G), zeros(G)) -> Reshape(back to x's
    shape) -> Mul(gamma per channel) -> Add(beta per channel)

becomes ``GroupNormalization(x, gamma, beta, num_groups=G)`` with gamma and beta of C elements
(opset 21's per-channel form, which the reference also takes). The Mul and Add are taken when
present, so a GroupNorm without affine parameters is recognised too. A chain whose middle values
have other users, whose instance norm scales or shifts the groups, or whose parameters are not
per-channel literals is left alone.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL
from compiler.ir.shape import Shape
from compiler.passes.rewrite import only_user, replace_chain


def _literal(ins):
    return np.asarray(ins.value) if ins.op == LITERAL else None


def _per_channel(binary, chain_value, lens):
    """The per-channel vector (C elements) ``binary`` applies to ``chain_value`` of logical shape
    ``lens``, or None when its other operand is not a literal broadcasting over channels only."""
    if binary is None or len(binary.inputs) != 2 or chain_value not in binary.inputs:
        return None
    other = binary.inputs[1] if binary.inputs[0] is chain_value else binary.inputs[0]
    value = _literal(other)
    if value is None or value.ndim > len(lens) or binary.shape.lens != chain_value.shape.lens:
        return None
    full = (1,) * (len(lens) - value.ndim) + value.shape
    if any(d != 1 for k, d in enumerate(full) if k != 1) or full[1] not in (1, lens[1]):
        return None
    return np.broadcast_to(value.reshape(-1), (lens[1],))


def match(norm):
    """(x, groups, last instruction, gamma, beta) of the chain around InstanceNormalization
    ``norm``, or None."""
    split = norm.inputs[0]
    if split.op != "Reshape" or len(split.users) != 1 or split.module is not norm.module:
        return None
    x, lens = split.inputs[0], tuple(split.inputs[0].shape.lens) if isinstance(split.inputs[0].shape, Shape) else ()
    inner = tuple(split.shape.lens)
    if len(lens) < 3 or len(inner) != 3 or inner[0] != lens[0] or lens[1] % inner[1] or not split.shape.static:
        return None
    ones, zeros = _literal(norm.inputs[1]), _literal(norm.inputs[2])
    if ones is None or zeros is None or not (np.all(ones == 1) and np.all(zeros == 0)):
        return None
    back = only_user(norm, "Reshape")
    if back is None or tuple(back.shape.lens) != lens:
        return None
    last, gamma, beta = back, np.ones(lens[1]), np.zeros(lens[1])
    mul = only_user(back, "Mul")
    scale = _per_channel(mul, back, lens)
    if scale is not None:
        last, gamma = mul, scale
    add = only_user(last, "Add")
    shift = _per_channel(add, last, lens)
    if shift is not None:
        last, beta = add, shift
    return x, inner[1], last, gamma, beta


class RecognizeGroupNorm:
    name = "recognize_group_norm"

    def apply(self, mpm) -> None:
        module = mpm.module
        for norm in [i for i in module.instructions if i.op == "InstanceNormalization"]:
            found = match(norm) if len(norm.inputs) == 3 else None
            if found is not None:
                self._replace(module, norm, *found)

    @staticmethod
    def _replace(module, norm, x, groups, last, gamma, beta):
        attrs = {"num_groups": groups, "epsilon": float(norm.attrs.get("epsilon", 1e-5)), "stash_type": 1}
        replace_chain(module, last, "GroupNormalization", [x], attrs, literals=[gamma, beta])
