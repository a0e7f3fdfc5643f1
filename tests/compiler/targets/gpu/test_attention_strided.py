"""Attention that cuDNN's fused engines do not take (fp32, odd head sizes) runs as two strided
cuBLAS products (split-bf16 in fp32) around one softmax kernel: against the reference of the unfused graph on fresh
random inputs (needs a CUDA GPU): fp32 and fp16, padding and causal masks, ViT's and Swin's
sequence lengths (197, 49), more keys than queries, and whole blocks (4-D heads and PyTorch's 3-D
MultiheadAttention layout) run eagerly, recorded into CUDA graphs and replayed."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.kernels import sdpa

from tests.compiler.targets.gpu import attention_cases
from tests.compiler.targets.gpu.attention_qkv_cases import feeds, qkv_model

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

# fp32 products are split-bf16 products, as the target's other large fp32 products are
# (``matmul_split``): within about 2e-5 of the output's scale, not exact fp32's 1e-6.
TOL = {"float32": 5e-5, "float16": 4e-3}


def _paths(program):
    steps = program.compiled.context.roots["main"].body.steps
    return [getattr(fn, "path", "") for _i, fn, _a, _d in steps]


def _expected_path(dtype, head):
    return "cudnn-sdpa" if sdpa.supported(dtype, head, head) and _frontend() else "strided-softmax"


def _frontend():
    from compiler.targets.gpu import libraries
    return libraries.frontend() is not None


def _run_three_times(program, reference, make_feeds, dtype):
    for seed in range(3):       # eager, recorded into CUDA graphs, replayed: fresh inputs each
        x = make_feeds(seed)
        (got,), (want,) = program.run(x), reference.run(x)
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    assert program.compiled.context.roots["main"].graph_error is None


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape, form, mask, kv", [
    ((2, 3, 197, 64), "sdpa", None, None), ((3, 4, 49, 32), "mul", None, None),
    ((2, 2, 33, 12), "div", "input", None), ((2, 3, 40, 20), "sdpa", "causal", None),
    ((2, 2, 5, 16), "div", "input", 37)])
def test_attention_matches_reference(dtype, shape, form, mask, kv):
    onnx_model = qkv_model(shape, dtype, form, mask, kv_seq=kv)
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    assert _paths(program).count(_expected_path(dtype, shape[3])) == 1
    _run_three_times(program, reference, lambda seed: feeds(onnx_model, dtype, seed), dtype)


@pytest.mark.parametrize("three_d, mask, causal", [(False, True, None), (True, False, None),
                                                   (False, False, float(np.finfo(np.float32).min))])
def test_fp32_block_compiles_whole_and_replays(three_d, mask, causal):
    shape = dict(batch=2, seq=197, heads=3, size=64)
    onnx_model = attention_cases.block(**shape, three_d=three_d, mask=mask, causal=causal)
    program = compiler.parse_onnx(onnx_model).compile("gpu")
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    assert _paths(program).count("strided-softmax") == 1
    _run_three_times(program, reference,
                     lambda seed: attention_cases.feeds(**shape, mask=mask, seed=seed, three_d=three_d), "float32")


def test_fp32_attention_is_exact_where_products_do_not_split():
    from compiler.targets.gpu.options import GpuOptions

    shape = dict(batch=2, seq=197, heads=3, size=64)
    onnx_model = attention_cases.block(**shape, three_d=False, mask=True, causal=None)
    program = compiler.parse_onnx(onnx_model).compile("gpu", gpu_options=GpuOptions(fp32_split=False))
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    x = attention_cases.feeds(**shape, mask=True, seed=5, three_d=False)
    (got,), (want,) = program.run(x), reference.run(x)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
