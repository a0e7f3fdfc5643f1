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
         "gru_lbr0", "lstm_bidirectional", "gru_bidirectional", "conv_add_relu", "conv_relu", "conv_chain_pool_concat"}


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


@pytest.mark.parametrize("path", ["gemm", "cudnn"])
def test_fp32_convolutions_keep_fp32_arithmetic(path, monkeypatch):
    """A deep fp32 convolution (K = 576 products per output) against the reference: TF32 tensor
    cores or a Winograd transform would differ by ~1e-3 of the output scale, exact fp32 by ~1e-6.
    Guards the GEMM path, and the cuDNN autotuner's accuracy gate and note filters."""
    from gpu_cases import conv
    monkeypatch.setenv("PERFBOT_GPU_FP32_CONV", path)
    model = conv((2, 64, 20, 20), (64, 64, 3, 3), pads=[1, 1, 1, 1])
    ref_p = compiler.parse_onnx(model)
    feeds = feeds_for(ref_p, 5)
    ref = ref_p.compile("ref").run(feeds)[0]
    got = np.asarray(compiler.parse_onnx(model).compile("gpu").run(feeds)[0])
    scale = float(np.max(np.abs(ref)))
    assert float(np.max(np.abs(got - ref))) <= 2e-5 * scale


def test_cudnn_plans_reload_from_disk(tmp_path, monkeypatch):
    """A built cuDNN plan is kept on disk; a later compile loads it (no build) and computes the
    same result."""
    import os

    from compiler.targets.gpu.kernels import conv as convk
    monkeypatch.setenv("PERFBOT_GPU_CACHE", str(tmp_path))
    monkeypatch.setattr(convk, "_plans", None)
    monkeypatch.setattr(convk, "_graphs", {})
    program = compiler.parse_onnx(build("conv_add_relu"))
    feeds = feeds_for(program, 6)
    first = np.asarray(program.compile("gpu", fp16=True).run(feeds)[0])
    assert [f for f in os.listdir(tmp_path / "cudnn_plans") if f.endswith(".plan")]
    monkeypatch.setattr(convk, "_graphs", {})
    again = compiler.parse_onnx(build("conv_add_relu")).compile("gpu", fp16=True)
    assert {g.tuned for g in convk._graphs.values() if g is not None} == {"loaded"}
    np.testing.assert_array_equal(np.asarray(again.run(feeds)[0]), first)
