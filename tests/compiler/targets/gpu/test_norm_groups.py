"""GroupNormalization and InstanceNormalization as one kernel (with SiLU folded in), compiled whole
against the reference on fresh random inputs (needs a CUDA GPU): groups 1 and 32, per-group and
per-channel parameters, packed and channels-last inputs (after a convolution), fp32 and fp16,
rows taking a warp and rows over one warp's limit taking a block."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import init, model, vi
from tests.compiler.targets.gpu.norm_cases import check_on_gpu, group_norm_chain, group_normalization

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _instance_norm(shape, dtype):
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    rng = np.random.default_rng(6)
    inits = [init("s", (1 + 0.3 * rng.standard_normal(shape[1])).astype(dtype)),
             init("b", rng.standard_normal(shape[1]).astype(dtype))]
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)
    return model([node], [vi("x", shape, t)], [vi("y", None, t)], inits)


def _check(onnx_model, shape, dtype, fp16=False):
    tol = 2e-4 if dtype == "float32" and not fp16 else 1.5e-2
    check_on_gpu(onnx_model, "norm-groups", 1, shape, dtype, tol, fp16)


@pytest.mark.parametrize("shape, groups, silu, conv, dtype", [
    ((2, 64, 9, 7), 32, True, False, "float32"), ((2, 64, 9, 7), 1, False, False, "float32"),
    ((3, 64, 11, 5), 32, True, True, "float32"), ((2, 320, 16, 16), 32, True, True, "float16"),
    ((1, 96, 33, 31), 32, False, True, "float16"), ((2, 64, 37), 32, True, False, "float16")])
def test_group_norm_chain_matches_reference(shape, groups, silu, conv, dtype):
    _check(group_norm_chain(shape, groups, silu=silu, conv=conv, dtype=dtype), shape, dtype)


def test_group_norm_chain_under_fp16_mode():
    shape = (2, 128, 16, 16)
    _check(group_norm_chain(shape, 32, conv=True), shape, "float32", fp16=True)


@pytest.mark.parametrize("shape, groups, per_group, dtype, opset", [
    ((2, 64, 9, 7), 32, True, "float32", 18), ((3, 30, 5, 3), 5, False, "float16", 21),
    ((2, 12, 7), 12, False, "float32", 21)])
def test_group_normalization_op_matches_reference(shape, groups, per_group, dtype, opset):
    _check(group_normalization(shape, groups, per_group, dtype, opset), shape, dtype)


@pytest.mark.parametrize("shape, dtype", [((2, 5, 37), "float32"), ((3, 7, 45, 41), "float16")])
def test_instance_norm_matches_reference(shape, dtype):
    _check(_instance_norm(shape, dtype), shape, dtype)
