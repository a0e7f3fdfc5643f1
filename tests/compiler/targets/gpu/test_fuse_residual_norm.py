"""The residual Add before a LayerNorm or RMSNorm folds into it on the gpu target, the sum still
read by its other users through the fused op's second result; a broadcasting Add or a norm over
another axis is left alone (checked without a GPU: passes, and NumPy standing in for CuPy)."""
import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.norm_cases import check_in_emulation, residual_norm


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


@pytest.mark.parametrize("norm", ["LayerNormalization", "RMSNormalization"])
@pytest.mark.parametrize("with_sum", [True, False])
def test_add_folds_into_the_norm(norm, with_sum):
    ops = _ops(residual_norm(norm=norm, with_sum=with_sum))
    assert "residual_norm" in ops and norm not in ops and "Add" not in ops
    assert ops.count("get_tuple_elem") == (2 if with_sum else 0)


@pytest.mark.parametrize("near_miss", [{"b_shape": (1, 1, 96)}, {"axis": 1}])
def test_near_misses_keep_the_add(near_miss):
    assert "residual_norm" not in _ops(residual_norm(**near_miss))


@pytest.mark.parametrize("kwargs", [{}, {"with_sum": False}, {"bias": False}, {"norm": "RMSNormalization"},
                                    {"norm": "RMSNormalization", "with_sum": False}, {"b_shape": (1, 1, 96)}])
def test_fused_graph_matches_reference_in_emulation(kwargs):
    feeds = {"x": np.random.default_rng(8).standard_normal((2, 9, 96)).astype(np.float32) * 2 + 0.5}
    check_in_emulation(residual_norm(**kwargs), feeds, 1e-5)
