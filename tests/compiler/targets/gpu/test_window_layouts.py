"""Window layouts and window attention on the GPU against the reference target on fresh random
inputs (needs a CUDA GPU): the row gather kernel, a roll and window partition as one row gather
(exact), Swin's
shifted-window attention with its folded mask and MaxViT's rank-5 Einsum attention, in fp16 and
fp32; eager, recorded into CUDA graphs and replayed. The rewrites themselves are checked without a
GPU in tests/compiler/passes (test_gather_rearrangements.py, test_window_attention.py)."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.window_cases import (einsum_window_attention, feeds_for, rolled_windows,
                                                     shifted_window_attention)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("width, dtype", [(96, "float16"), (96, "float32"), (7, "float32"), (3, "float16"),
                                          (1, "float16")])
def test_row_gather_kernel_is_exact(width, dtype):
    import cupy
    from compiler.targets.gpu.kernels import slice_copy
    rng = np.random.default_rng(width)
    src = rng.standard_normal((50, width)).astype(dtype)
    index = rng.integers(0, 50, 77).astype(np.int64)      # rows repeat, some never read
    out = cupy.full((77, width), np.nan, dtype=dtype)
    slice_copy.gather_rows(out, cupy.asarray(src), cupy.asarray(index))
    np.testing.assert_array_equal(cupy.asnumpy(out), src[index])


def _ops(program):
    return [i.op for i in program.main.instructions]


def _against_reference(onnx_model, fp16, tol):
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=fp16)
    for seed in range(3):       # eager, recorded, replayed
        feeds = feeds_for(onnx_model, seed)
        for got, want in zip(program.run(feeds), reference.run(feeds)):
            want = np.asarray(want, np.float32)
            assert np.abs(np.asarray(got, np.float32) - want).max() <= tol * np.abs(want).max()
    return program


@pytest.mark.parametrize("kwargs", [{}, {"b": 3, "size": 56, "window": 7, "c": 96}])
@pytest.mark.parametrize("fp16, tol", [(False, 0.0), (True, 1e-3)])   # fp16: the input's rounding alone
def test_roll_and_partition_gather_moves_values_unchanged(kwargs, fp16, tol):
    program = _against_reference(rolled_windows(**kwargs), fp16=fp16, tol=tol)
    assert "Gather" in _ops(program) and "Concat" not in _ops(program)
    steps = program.compiled.context.roots["main"].body.steps
    assert [getattr(fn, "path", "") for _i, fn, _a, _d in steps].count("gather-rows") == 1


@pytest.mark.parametrize("fp16, tol", [(True, 1e-2), (False, 5e-5)])   # fp32: split-bf16 products
@pytest.mark.parametrize("kwargs", [{}, {"images": 2, "windows": 64, "heads": 3, "tokens": 49, "size": 32}])
def test_shifted_window_attention_matches_reference(fp16, tol, kwargs):
    program = _against_reference(shifted_window_attention(**kwargs), fp16, tol)
    assert "Attention" in _ops(program) and "Softmax" not in _ops(program)


@pytest.mark.parametrize("fp16, tol", [(True, 1e-2), (False, 5e-5)])   # fp32: split-bf16 products
@pytest.mark.parametrize("kwargs", [{}, {"batch": 2, "grid": 16, "heads": 2, "tokens": 49, "size": 32}])
def test_einsum_window_attention_matches_reference(fp16, tol, kwargs):
    program = _against_reference(einsum_window_attention(**kwargs), fp16, tol)
    assert "Attention" in _ops(program) and "Softmax" not in _ops(program)
