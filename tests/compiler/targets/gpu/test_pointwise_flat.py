"""The flat pointwise kernel: which operand layouts it reads (checked on NumPy arrays), and its
results against the body's reference meaning on fresh random inputs (needs a CUDA GPU)."""
import numpy as np
import pytest

from compiler.passes.fuse_pointwise import evaluate_body
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels.pointwise_flat import layout, source

ADD = {"op": "Add", "attrs": {}, "args": ["x0", "x1"]}
GELU = [{**ADD, "dtype": "D"}, {"op": "Div", "attrs": {}, "args": ["t0", "cfloat32:1.4142135"], "dtype": "D"},
        {"op": "Erf", "attrs": {}, "args": ["t1"], "dtype": "D"},
        {"op": "Add", "attrs": {}, "args": ["t2", "cfloat32:1.0"], "dtype": "D"},
        {"op": "Mul", "attrs": {}, "args": ["t0", "t3"], "dtype": "D"},
        {"op": "Mul", "attrs": {}, "args": ["t4", "cfloat32:0.5"], "dtype": "D"}]


def _typed(body, dtype):
    return [{**s, "dtype": dtype} for s in body]


def test_layouts_it_reads():
    out = (4, 5, 6)
    assert layout(np.zeros(out), out) == 0
    assert layout(np.zeros(6), out) == 6 and layout(np.zeros((5, 6)), out) == 30
    assert layout(np.zeros((1, 1, 6)), out) == 6 and layout(np.float32(2), out) == 1
    assert layout(np.zeros((4, 1, 6)), out) is None               # broadcast in the middle
    assert layout(np.zeros((6, 5, 4)).T, out) is None             # not packed


def test_source_reads_broadcast_operands_modulo_their_size():
    name, text = source(_typed(GELU, "float16"), ["float16", "float16"], [0, 3072])
    assert name.startswith("pwf_") and "in0[i]" in text and "in1[i % m1]" in text and "unsigned int m1" in text


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("dtype, shapes", [("float16", [(7, 197, 3072), (3072,)]),
                                           ("float32", [(3, 5, 7), (3, 5, 7)]),
                                           ("float16", [(2, 33, 17), ()]), ("float32", [(), (9, 11)])])
def test_flat_kernel_matches_reference(dtype, shapes):
    import cupy

    from compiler.targets.gpu.kernels.pointwise_flat import run_flat
    rng = np.random.default_rng(11)
    host = [np.asarray(rng.standard_normal(s)).astype(dtype) for s in shapes]
    out_shape = np.broadcast_shapes(*shapes)
    body = _typed(GELU, dtype)
    got = run_flat(body, [dtype] * 2, [cupy.asarray(h) for h in host], out_shape, dtype)
    expected = evaluate_body(body, host)
    tol = 5e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32), expected.astype(np.float32),
                               rtol=tol, atol=tol)
