"""cuDNN attention plans kept on disk (needs a CUDA GPU and the cuDNN frontend): a plan built in
one process is written to the plan folder, and a later plan of the same geometry is read from
there instead of built, giving the reference's attention."""
import os

import numpy as np
import pytest

from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels import sdpa
from compiler.targets.gpu.options import GpuOptions

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _reference(q, k, v, scale):
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", scores / scores.sum(axis=-1, keepdims=True), v)


def test_a_kept_plan_is_read_back_instead_of_built(tmp_path, monkeypatch):
    import cupy

    from compiler.targets.gpu import libraries
    if libraries.frontend() is None:
        pytest.skip("no cuDNN frontend")
    options = GpuOptions(cache_dir=str(tmp_path))
    monkeypatch.setattr(sdpa, "_plans", {})
    rng = np.random.default_rng(11)
    host = [rng.standard_normal((2, 4, 48, 64)).astype(np.float16) for _ in range(3)]
    q, k, v = (cupy.asarray(a) for a in host)
    built = sdpa.plan_for("float16", q, k, v, None, 0.125, options=options)
    kept = [f for f in os.listdir(tmp_path / "cudnn_plans")]
    assert len(kept) == 1

    def not_built(*args):
        raise AssertionError("the plan was built again, not read back")
    monkeypatch.setattr(sdpa, "_built", not_built)
    monkeypatch.setattr(sdpa, "_plans", {})
    loaded = sdpa.plan_for("float16", q, k, v, None, 0.125, options=options)
    assert loaded is not built
    want = _reference(*(a.astype(np.float32) for a in host), 0.125)
    for plan in (built, loaded):
        np.testing.assert_allclose(cupy.asnumpy(plan(q, k, v)).astype(np.float32), want, atol=4e-3)


def test_no_plan_is_kept_with_the_plan_cache_off(tmp_path, monkeypatch):
    import cupy

    from compiler.targets.gpu import libraries
    if libraries.frontend() is None:
        pytest.skip("no cuDNN frontend")
    monkeypatch.setattr(sdpa, "_plans", {})
    q = cupy.asarray(np.random.default_rng(12).standard_normal((1, 2, 16, 64)).astype(np.float16))
    sdpa.plan_for("float16", q, q, q, None, 0.125, options=GpuOptions(cache_dir=str(tmp_path), plan_cache=False))
    assert not (tmp_path / "cudnn_plans").exists()
