"""Attention in fp16 runs as cuDNN's fused attention, against the reference of the unfused
graph on fresh random inputs (needs a CUDA GPU and the cuDNN frontend): ViT's and Swin's
sequence lengths, 3-D (PyTorch's MultiheadAttention) and 4-D head layouts, scale on the scores
or on both operands, BERT's padding mask, a decoder's causal Where, grouped key/value heads; eager, recorded into CUDA graphs and replayed."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu import libraries
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.attention_cases import block, feeds

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("shape, three_d, mask, scale_on, causal, kv_heads", [
    ((2, 197, 4, 64), True, False, "both", None, None), ((3, 49, 3, 32), False, True, "scores", None, None),
    ((2, 128, 2, 64), False, True, "both", None, None), ((1, 77, 2, 128), True, True, "scores", None, None),
    ((2, 256, 2, 64), False, False, "scores", -65504.0, None), ((1, 77, 3, 32), True, False, "both", -1e4, None),
    ((2, 256, 8, 64), False, False, "scores", -65504.0, 2), ((2, 49, 4, 32), False, True, "both", None, 1)])
def test_fused_attention_matches_reference(shape, three_d, mask, scale_on, causal, kv_heads):
    if libraries.frontend() is None:
        pytest.skip("needs the cuDNN frontend")
    batch, seq, heads, size = shape
    onnx_model = block(batch, seq, heads, size, three_d=three_d, mask=mask, scale_on=scale_on, causal=causal,
                       kv_heads=kv_heads)
    reference = compiler.parse_onnx(onnx_model).compile("ref")
    program = compiler.parse_onnx(onnx_model).compile("gpu", fp16=True)
    steps = program.compiled.context.roots["main"].body.steps
    for seed in range(3):       # eager, recorded, replayed
        x = feeds(batch, seq, heads, size, mask=mask, seed=seed, three_d=three_d)
        ref = reference.run(x)[0]
        got = program.run(x)[0].astype(np.float32)
        assert np.abs(got - ref).max() <= 1e-2 * np.abs(ref).max()
    assert [getattr(fn, "path", "") for _i, fn, _a, _d in steps].count("cudnn-sdpa") == 1
