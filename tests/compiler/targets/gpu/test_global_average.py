"""The channels-last global average pool kernel against NumPy's mean on fresh random inputs (needs
a CUDA GPU): one segment and several, odd channel counts, fp32 and fp16, a channel slice of a
wider buffer, and an NCHW input taking CuPy's mean."""
import numpy as np
import pytest

from compiler.targets.gpu.backend import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("dtype, n, c, h, w", [("float32", 3, 37, 7, 7), ("float32", 2, 64, 61, 59),
                                               ("float16", 4, 21, 14, 14), ("float16", 2, 96, 112, 112)])
def test_channels_last_mean_matches_numpy(dtype, n, c, h, w):
    import cupy

    from compiler.targets.gpu.global_average import global_average_runner
    x = np.random.default_rng(c).standard_normal((n, h, w, c)).astype(dtype)
    logical = cupy.asarray(x).transpose(0, 3, 1, 2)         # NCHW view of channels-last storage
    got = cupy.asnumpy(global_average_runner(cupy, dtype)(logical))
    want = x.astype(np.float64).mean(axis=(1, 2)).reshape(n, c, 1, 1)
    assert got.dtype == np.dtype(dtype) and got.shape == (n, c, 1, 1)
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["channel-slice", "nchw"])
def test_other_layouts_match_numpy(layout):
    import cupy

    from compiler.targets.gpu.global_average import global_average_runner
    rng = np.random.default_rng(5)
    if layout == "channel-slice":   # channels 3..13 of a 20-channel channels-last buffer
        x = rng.standard_normal((2, 9, 11, 20)).astype(np.float32)
        logical, host = cupy.asarray(x).transpose(0, 3, 1, 2)[:, 3:14], x.transpose(0, 3, 1, 2)[:, 3:14]
    else:
        host = rng.standard_normal((2, 11, 9, 10)).astype(np.float32)
        logical = cupy.asarray(host)
    got = cupy.asnumpy(global_average_runner(cupy, "float32")(logical))
    np.testing.assert_allclose(got, host.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
