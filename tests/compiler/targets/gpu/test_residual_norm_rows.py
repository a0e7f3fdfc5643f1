"""The residual Add and the LayerNorm or RMSNorm after it as one kernel, and the sum it writes for
its other readers, compiled whole against the reference on fresh random inputs (needs a CUDA GPU):
odd row lengths and counts, rows over one warp's limit, fp32 and fp16."""
import pytest

from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.norm_cases import check_on_gpu, residual_norm

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("shape, norm, with_sum, bias, dtype", [
    ((2, 9, 96), "LayerNormalization", True, True, "float32"),
    ((3, 5, 37), "LayerNormalization", False, False, "float32"),
    ((2, 7, 2049), "LayerNormalization", True, True, "float16"),
    ((4, 197, 768), "LayerNormalization", True, True, "float16"),
    ((3, 11, 333), "RMSNormalization", True, False, "float32"),
    ((2, 5, 4096), "RMSNormalization", False, False, "float16")])
def test_residual_norm_matches_reference(shape, norm, with_sum, bias, dtype):
    check_on_gpu(residual_norm(shape, norm, with_sum, bias, dtype=dtype), "residual-norm-rows", 1, shape, dtype,
                 1e-5 if dtype == "float32" else 4e-3)
