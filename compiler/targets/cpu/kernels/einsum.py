"""Two-operand Einsum as one batched matrix product (BLAS) instead of NumPy's generic loop.

Each index is a batch index (in both operands and the output), a contracted one (in both, not
the output), or free (in one operand and the output). The operands are transposed to
(batch, free, contracted) / (batch, contracted, free), multiplied with ``np.matmul``, and the
result transposed to the output's order. Anything else (repeated indices, an index summed in one
operand only, ellipses, more operands) declines to the reference.
"""
from __future__ import annotations

import numpy as np

from ..threads import matmul_into
from .common import plain_static


def einsum_kernel(ins):
    eq = ins.attrs.get("equation", "")
    if len(ins.inputs) != 2 or "..." in eq or "->" not in eq or not plain_static(ins):
        return None
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    a, b = terms
    if any(len(set(t)) != len(t) for t in (a, b, out)) or set(out) - set(a + b):
        return None
    if (set(a) - set(b) - set(out)) or (set(b) - set(a) - set(out)):
        return None
    batch = [i for i in out if i in a and i in b]
    free_a = [i for i in out if i in a and i not in b]
    free_b = [i for i in out if i in b and i not in a]
    contract = [i for i in a if i in b and i not in out]
    la = dict(zip(a, ins.inputs[0].shape.lens))
    lb = dict(zip(b, ins.inputs[1].shape.lens))
    size = {**la, **lb}
    perm_a = [a.index(i) for i in batch + free_a + contract]
    perm_b = [b.index(i) for i in batch + contract + free_b]

    def prod(idx):
        return int(np.prod([size[i] for i in idx], dtype=np.int64))
    shape_a = [prod([i]) for i in batch] + [prod(free_a), prod(contract)]
    shape_b = [prod([i]) for i in batch] + [prod(contract), prod(free_b)]
    mid = batch + free_a + free_b
    full = [size[i] for i in mid]
    perm_out = [mid.index(i) for i in out]
    identity = perm_out == list(range(len(out)))
    dtype = np.dtype(ins.shape.dtype)

    out_shape = [prod([i]) for i in batch] + [prod(free_a), prod(free_b)]
    macs = prod(batch) * prod(free_a) * prod(free_b) * prod(contract)

    def run(x, y):
        r = np.empty(out_shape, dtype=np.result_type(x, y))
        matmul_into(x.transpose(perm_a).reshape(shape_a), y.transpose(perm_b).reshape(shape_b), r, macs)
        r = r.reshape(full)
        return (r if identity else r.transpose(perm_out)).astype(dtype, copy=False)
    return run
