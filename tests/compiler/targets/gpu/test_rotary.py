"""RotaryEmbedding on the gpu target: the one-kernel rotation against the reference op on fresh
random inputs (strided x, caches shared by the batch or per sample, fp32 and fp16), and whole
programs whose exported rotation the passes recognise (needs a CUDA GPU)."""
import numpy as np
import pytest

import compiler
from compiler.ops.registry import get_op
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.passes.rotary_cases import caches, feeds, rotary_block

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

ATTRS = {"interleaved": 0, "rotary_embedding_dim": 0, "num_heads": 0, "positions": False}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("cache_batch", [1, 3])
@pytest.mark.parametrize("heads, seq, width", [(4, 16, 64), (3, 7, 10)])
def test_the_kernel_matches_the_reference_op(dtype, cache_batch, heads, seq, width):
    import cupy
    from compiler.targets.gpu.kernels.rotary import rotary_half
    rng = np.random.default_rng(heads * seq + width + cache_batch)
    stored = rng.standard_normal((3, seq, heads, width)).astype(dtype)     # (B, S, H, D), as a GEMM writes it
    cos, sin = (c[:, 0, :, : width // 2].astype(dtype) for c in caches(seq, width, cache_batch))
    x = stored.transpose(0, 2, 1, 3)                                        # (B, H, S, D) view
    want = get_op("RotaryEmbedding").compute(ATTRS, np.ascontiguousarray(x), cos, sin)
    got = rotary_half(cupy.asarray(stored).transpose(0, 2, 1, 3), cupy.asarray(cos), cupy.asarray(sin))
    assert got.flags.c_contiguous and got.shape == x.shape and got.dtype == x.dtype
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("fp16", [False, True])
@pytest.mark.parametrize("rotated", [16, 6])
def test_recognised_rotations_run_as_one_kernel(fp16, rotated):
    model = rotary_block(batch=2, seq=9, heads=4, width=16, cache_batch=2, rotated=rotated)
    program = compiler.parse_onnx(model).compile("gpu", fp16=fp16)
    root = program.compiled.context.roots["main"]
    paths = [getattr(fn, "path", "") for ins, fn, _i, _d in root.body.steps if ins.op == "RotaryEmbedding"]
    assert paths == ["rotary-half"]
    reference = compiler.parse_onnx(model).compile("ref")
    for seed in (1, 2, 3):      # eager, recorded, replayed
        given = feeds(batch=2, seq=9, heads=4, width=16, seed=seed)
        for g, r in zip(program.run(given), reference.run(given)):
            np.testing.assert_allclose(g, r, rtol=3e-3 if fp16 else 1e-5, atol=3e-3 if fp16 else 1e-5)
    assert root.graph_error is None and root.host_fallbacks == []


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_kernel_hands_on_the_features_past_a_partial_rotation(dtype):
    import cupy
    from compiler.targets.gpu.kernels.rotary import rotary_half
    rng = np.random.default_rng(11)
    stored = rng.standard_normal((2, 9, 4, 20)).astype(dtype)      # (B, S, H, D); 8 of 20 turn
    cos, sin = (c[:, 0, :, :4].astype(dtype) for c in caches(9, 8, 2))
    x = stored.transpose(0, 2, 1, 3)
    want = get_op("RotaryEmbedding").compute(dict(ATTRS, rotary_embedding_dim=8), np.ascontiguousarray(x), cos, sin)
    got = cupy.asnumpy(rotary_half(cupy.asarray(stored).transpose(0, 2, 1, 3), cupy.asarray(cos), cupy.asarray(sin)))
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[..., 8:], x[..., 8:])        # handed on as they are
