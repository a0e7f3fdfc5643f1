"""The direct-cuBLAS planning of the GPU target (``kernels.gemm.plan``), checked without a GPU: the
call it plans is carried out here as cuBLAS defines it (column-major, leading dimensions, batch
strides) over the operands' own memory, and must equal NumPy's matmul, for views of every kind a
lowering hands over (transposes, slices, broadcast batches, length-1 axes with any stride)."""
import numpy as np
import pytest

from compiler.targets.gpu.kernels import gemm


def _view(x, shape, strides):
    """Elements of ``x``'s buffer at element ``strides`` from its first element; refuses to
    reach outside the buffer (a wrong plan must fail the test, not read stray memory)."""
    base = x
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    start = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // x.itemsize
    hi = start + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    lo = start + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    assert 0 <= lo and hi < base.size, "the plan reads outside the operand"
    return np.lib.stride_tricks.as_strided(x, shape, tuple(s * x.itemsize for s in strides))


def cublas_as_planned(a, b):
    p = gemm.plan(a, b)
    if p is None:
        return None
    # cuBLAS, column-major: C (n x m, ld n) = op(B) (n x k) . op(A) (k x m).
    if p.op_a == gemm.OP_N:
        op_a = _view(a, (p.count, p.k, p.m), (p.stride_a, 1, p.lda))
    else:
        op_a = _view(a, (p.count, p.m, p.k), (p.stride_a, 1, p.lda)).transpose(0, 2, 1)
    if p.op_b == gemm.OP_N:
        op_b = _view(b, (p.count, p.n, p.k), (p.stride_b, 1, p.ldb))
    else:
        op_b = _view(b, (p.count, p.k, p.n), (p.stride_b, 1, p.ldb)).transpose(0, 2, 1)
    c_cm = op_b.astype(np.float64) @ op_a.astype(np.float64)          # (count, n, m)
    return c_cm.transpose(0, 2, 1).reshape(p.batch + (p.m, p.n))


RNG = np.random.default_rng(7)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "plain": lambda: (r(5, 7), r(7, 3)),
    "a transposed": lambda: (r(7, 5).T, r(7, 3)),
    "b transposed": lambda: (r(5, 7), r(3, 7).T),
    "batched": lambda: (r(4, 5, 7), r(4, 7, 3)),
    "batch broadcast b": lambda: (r(4, 5, 7), r(7, 3)[None]),
    "expanded batch (stride 0)": lambda: (r(4, 5, 7), np.broadcast_to(r(1, 7, 3), (4, 7, 3))),
    "broadcast single row": lambda: (np.broadcast_to(r(1, 7), (1, 7)), r(7, 3)),
    "expanded row (stride 0, rows > 1)": lambda: (np.broadcast_to(r(1, 7), (5, 7)), r(7, 3)),
    "single column": lambda: (r(5, 1), r(1, 3)),
    # A length-1 batch axis whose stride is not the batch step (a transpose of (2, 4, 1, 8)).
    "length-1 batch axis after transpose": lambda: (r(2, 4, 1, 8).transpose(0, 2, 1, 3), r(2, 1, 8, 3)),
    "multi-query heads": lambda: (r(2, 1, 4, 8).transpose(0, 1, 2, 3), np.broadcast_to(r(2, 1, 8, 8), (2, 1, 8, 8))),
    "two batch axes": lambda: (r(2, 3, 5, 7), r(2, 3, 7, 4)),
    "two batch axes, outer expanded": lambda: (np.broadcast_to(r(1, 3, 5, 7), (2, 3, 5, 7)), r(2, 3, 7, 4)),
    "padded rows (slice)": lambda: (r(5, 9)[:, :7], r(7, 3)),
    "every other matrix": lambda: (r(8, 5, 7)[::2], r(4, 7, 3)),
    "batch axes out of order": lambda: (r(3, 2, 5, 7).transpose(1, 0, 2, 3), r(2, 3, 7, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_planned_call_equals_matmul_or_declines(name):
    a, b = CASES[name]()
    got = cublas_as_planned(a, b)
    if got is None:      # declined: the caller copies the operands to packed ones first
        assert gemm.plan(np.ascontiguousarray(a), np.ascontiguousarray(b)) is not None
        return
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_plans_take_the_common_layouts_without_copies():
    for name in ("plain", "a transposed", "b transposed", "batched", "expanded batch (stride 0)",
                 "broadcast single row", "length-1 batch axis after transpose", "two batch axes"):
        a, b = CASES[name]()
        assert gemm.plan(a, b) is not None, name
