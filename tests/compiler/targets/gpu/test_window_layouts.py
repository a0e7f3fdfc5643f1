"""Window layouts and window attention on the GPU against the reference target on fresh random
inputs (needs a CUDA GPU): a roll and window partition as one row gather (exact), Swin's
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
def test_roll_and_partition_gather_is_exact(kwargs):
    program = _against_reference(rolled_windows(**kwargs), fp16=False, tol=0.0)
    assert "Gather" in _ops(program) and "Concat" not in _ops(program)


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
