"""Softmax and LogSoftmax over the last axis as one kernel, compiled whole against the reference
on fresh random inputs (needs a CUDA GPU): odd row lengths and counts, rows taking a warp and
rows over one warp's limit taking a block, fp32 and fp16; another axis keeps the CuPy path."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.targets.gpu.cases import model, vi
from tests.compiler.targets.gpu.norm_cases import check_on_gpu

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


def _softmax(op, dtype, shape, axis):
    t = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    return model([helper.make_node(op, ["x"], ["y"], axis=axis)], [vi("x", shape, t)], [vi("y", None, t)])


@pytest.mark.parametrize("op, dtype, shape, axis", [
    ("Softmax", "float32", (3, 5, 37), -1), ("Softmax", "float16", (2, 12, 7, 197), -1),
    ("Softmax", "float32", (3, 2500), 1), ("Softmax", "float16", (5, 4099), -1),
    ("Softmax", "float32", (7, 1), -1), ("LogSoftmax", "float32", (9, 1000), -1),
    ("LogSoftmax", "float16", (3, 1537), -1), ("Softmax", "float32", (3, 5, 37), 1)])
def test_softmax_matches_reference(op, dtype, shape, axis):
    last = axis in (-1, len(shape) - 1)
    check_on_gpu(_softmax(op, dtype, shape, axis), "softmax-rows", 1 if last else 0, shape, dtype,
                 1e-5 if dtype == "float32" else 2e-3)
