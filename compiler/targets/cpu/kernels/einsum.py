"""Two-operand Einsum as one batched matrix product (BLAS) instead of NumPy's generic loop, by
the plan the targets share (``compiler.targets.einsum_plan``); equations without one decline to
the reference."""
from __future__ import annotations

import numpy as np

from ..threads import matmul_into
from ...einsum_plan import plan_einsum
from .common import plain_static


def einsum_kernel(ins):
    eq = ins.attrs.get("equation", "")
    plan = plan_einsum(eq) if len(ins.inputs) == 2 and plain_static(ins) else None
    if plan is None:
        return None
    batch, free_a, free_b, contract = plan.batch, plan.free_a, plan.free_b, plan.contract
    size = {**dict(zip(plan.a, ins.inputs[0].shape.lens)), **dict(zip(plan.b, ins.inputs[1].shape.lens))}
    perm_a, perm_b, perm_out = plan.perm_a, plan.perm_b, plan.perm_out

    def prod(idx):
        return int(np.prod([size[i] for i in idx], dtype=np.int64))
    shape_a = [prod([i]) for i in batch] + [prod(free_a), prod(contract)]
    shape_b = [prod([i]) for i in batch] + [prod(contract), prod(free_b)]
    full = [size[i] for i in batch + free_a + free_b]
    identity = perm_out == list(range(len(plan.out)))
    dtype = np.dtype(ins.shape.dtype)

    out_shape = [prod([i]) for i in batch] + [prod(free_a), prod(free_b)]
    macs = prod(batch) * prod(free_a) * prod(free_b) * prod(contract)

    def run(x, y):
        r = np.empty(out_shape, dtype=np.result_type(x, y))
        matmul_into(x.transpose(perm_a).reshape(shape_a), y.transpose(perm_b).reshape(shape_b), r, macs)
        r = r.reshape(full)
        return (r if identity else r.transpose(perm_out)).astype(dtype, copy=False)
    return run
