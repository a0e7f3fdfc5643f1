"""Every GPU lowering against the reference target on fresh random inputs (needs a CUDA GPU)."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available

from gpu_cases import CASES, build, feeds_for

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

# cuDNN may use TF32 tensor cores for fp32 convolutions (as PyTorch does by default).
LOOSE = {"conv3x3", "conv7x7s2", "conv1x1", "conv_grouped", "conv_depthwise", "conv_dilated_asym",
         "conv_bn_relu_add", "matmul", "matmul_batched", "gemm", "einsum", "attention", "lstm", "gru",
         "gru_lbr0", "conv_add_relu", "conv_relu", "conv_chain_pool_concat"}


def _run(name, target, seed, **options):
    program = compiler.parse_onnx(build(name))
    feeds = feeds_for(program, seed)
    program.compile(target, **options)
    return program, [np.asarray(o) for o in program.run(feeds)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_reference(name):
    """Three runs on fresh inputs: eager, recorded into CUDA graphs, replayed."""
    program = compiler.parse_onnx(build(name)).compile("gpu")
    root = program.compiled.context.roots["main"]
    rtol = 2e-3 if name in LOOSE else 1e-5
    for seed in (1, 2, 3):
        _, ref = _run(name, "ref", seed)
        got = [np.asarray(o) for o in program.run(feeds_for(program, seed))]
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype and g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol)
    assert root.host_fallbacks == []
    assert root.graph_error is None and root.graphs is not None


@pytest.mark.parametrize("name", ["chain", "conv_bn_relu_add", "attention", "layernorm", "softmax",
                                  "conv_add_relu", "conv_chain_pool_concat", "lstm", "resize_linear"])
def test_fp16_mode_stays_close(name):
    _, ref = _run(name, "ref", 3)
    _, got = _run(name, "gpu", 3, fp16=True)
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("offload_copy", [True, False])
@pytest.mark.parametrize("assign", [{"Softmax": "cpu"}, {"Softmax": "gpu/cpu"}, {"Softmax": "gpu/cpu/gpu"}])
def test_partitioned_gpu_cpu_equals_single_target(assign, offload_copy):
    import cupy
    _, ref = _run("attention", "ref", 4)
    program = compiler.parse_onnx(build("attention"))
    feeds = feeds_for(program, 4)
    program.compile(["gpu", "cpu"], offload_copy=offload_copy, assign=assign)
    if not offload_copy:
        feeds = {k: cupy.asarray(v) for k, v in feeds.items()}
    for _ in range(3):   # eager, recorded, replayed
        got = program.run(feeds)
        for g, r in zip(got, ref):
            g = cupy.asnumpy(g) if isinstance(g, cupy.ndarray) else g
            np.testing.assert_allclose(g, r, rtol=2e-3, atol=2e-3)
    assert sum(1 for t in program.roots.values() if t == "gpu") >= 1


def test_conv_tails_fuse_into_the_convolution():
    program = compiler.parse_onnx(build("conv_add_relu")).compile("gpu")
    ops = [i.op for i in program.main.instructions]
    assert "fused_conv" in ops and "Conv" not in ops and "fused_pointwise" not in ops


@pytest.mark.parametrize("name", ["conv3x3", "conv7x7s2", "conv1x1", "conv_dilated_asym", "conv_add_relu",
                                  "conv_chain_pool_concat"])
def test_fp32_gemm_convolution_matches_reference(name, monkeypatch):
    monkeypatch.setenv("PERFBOT_GPU_FP32_CONV", "gemm")
    program = compiler.parse_onnx(build(name)).compile("gpu")
    for seed in (1, 2, 3):
        _, ref = _run(name, "ref", seed)
        got = program.run(feeds_for(program, seed))
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
