"""The flat pointwise kernel against the body's reference meaning on fresh random inputs (needs a
CUDA GPU): a bias over the trailing axis, packed operands, scalars on either side, fp32 and fp16;
channels-last operands with a per-sample, per-channel scale, run in their memory order."""
import numpy as np
import pytest

from compiler.passes.fuse_pointwise import evaluate_body
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.test_pointwise_flat import GELU, _typed

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("dtype, shapes", [("float16", [(7, 197, 3072), (3072,)]),
                                           ("float32", [(3, 5, 7), (3, 5, 7)]),
                                           ("float16", [(2, 33, 17), ()]), ("float32", [(), (9, 11)]),
                                           ("float32", [(4, 6, 8), (6, 8)]), ("float16", [(5, 12), (5, 1)])])
def test_flat_kernel_matches_reference(dtype, shapes, offset):
    import cupy

    from compiler.targets.gpu.kernels.pointwise_flat import run_flat
    rng = np.random.default_rng(11)
    host = [np.asarray(rng.standard_normal(s)).astype(dtype) for s in shapes]
    out_shape = np.broadcast_shapes(*shapes)
    body = _typed(GELU, dtype)

    def on_device(h):   # at ``offset`` elements into an allocation: a start no vector load may take
        if h.ndim == 0:
            return cupy.asarray(h)
        flat = cupy.empty(h.size + offset, dtype=h.dtype)
        flat[offset:] = cupy.asarray(h.reshape(-1))
        return flat[offset:].reshape(h.shape)
    got = run_flat(body, [dtype] * 2, [on_device(h) for h in host], out_shape, dtype)
    expected = evaluate_body(body, host)
    tol = 5e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32), expected.astype(np.float32),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype, scale_shape", [("float16", (3, 40, 1, 1)), ("float32", (3, 1, 1, 1)),
                                               ("float32", (1, 40, 1, 1))])
def test_channels_last_operands_run_in_memory_order(dtype, scale_shape):
    import cupy

    from compiler.targets.gpu.kernels.pointwise_flat import run_flat
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 40, 9, 7)).astype(dtype)
    scale = rng.standard_normal(scale_shape).astype(dtype)
    x_nhwc = cupy.asarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)    # logical NCHW, channels-last
    body = _typed(GELU, dtype)
    got = run_flat(body, [dtype] * 2, [x_nhwc, cupy.asarray(scale)], x.shape, dtype)
    assert got is not None and got.shape == x.shape and got.transpose(0, 2, 3, 1).flags.c_contiguous
    tol = 5e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32),
                               evaluate_body(body, [x, scale]).astype(np.float32), rtol=tol, atol=tol)
