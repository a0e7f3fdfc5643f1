"""RMSNorm over the last axis as one kernel, from the exported chain and from the opset-23 op,
compiled whole against the reference on fresh random inputs (needs a CUDA GPU): odd row lengths
and counts, rows over one warp's limit, fp32 and fp16, with and without a weight."""
import pytest

from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.norm_cases import check_on_gpu, rms_chain, rms_normalization

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("shape, form, weight, dtype", [
    ((2, 7, 96), "reciprocal", True, "float32"), ((3, 5, 4099), "div", True, "float32"),
    ((5, 37), "div_one", False, "float32"), ((2, 9, 4096), "reciprocal", True, "float16"),
    ((7, 333), "div", False, "float16")])
def test_rms_chain_matches_reference(shape, form, weight, dtype):
    check_on_gpu(rms_chain(shape, form, weight, dtype=dtype), "rms-rows", 1, shape, dtype,
                 1e-5 if dtype == "float32" else 4e-3)


@pytest.mark.parametrize("shape, dtype", [((3, 11, 2049), "float32"), ((4, 768), "float16")])
def test_rms_normalization_op_matches_reference(shape, dtype):
    check_on_gpu(rms_normalization(shape, dtype), "rms-rows", 1, shape, dtype, 1e-5 if dtype == "float32" else 4e-3)
