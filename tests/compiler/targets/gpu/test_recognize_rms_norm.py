"""Exported RMSNorm chains become one RMSNormalization on the gpu target; near misses (another
axis, the epsilon after the root, another power, a middle value read elsewhere) stay as they are
(checked without a GPU: passes, and NumPy standing in for CuPy to compare with the reference)."""
import numpy as np
import pytest

import compiler
from compiler.compile import prepare_program

from tests.compiler.targets.gpu.norm_cases import check_in_emulation, rms_chain


def _ops(onnx_model):
    program = compiler.parse_onnx(onnx_model)
    prepare_program(program, "gpu")
    return [i.op for i in program.main.instructions if not i.op.startswith("@")]


@pytest.mark.parametrize("kwargs", [{}, {"form": "div_one"}, {"form": "div"}, {"weight": False},
                                    {"form": "div", "weight": False}])
def test_chain_becomes_one_rms_norm(kwargs):
    ops = _ops(rms_chain(**kwargs))
    assert "RMSNormalization" in ops and "ReduceMean" not in ops and "fused_pointwise" not in ops


@pytest.mark.parametrize("near_miss", [{"axis": 1}, {"eps_after_root": True}, {"power": 3.0},
                                       {"extra_output": "m"}, {"extra_output": "r"}])
def test_near_misses_are_left_alone(near_miss):
    ops = _ops(rms_chain(**near_miss))
    assert "RMSNormalization" not in ops and "ReduceMean" in ops


@pytest.mark.parametrize("kwargs", [{}, {"form": "div"}, {"weight": False}, {"axis": 1}, {"extra_output": "n"}])
def test_rewritten_graph_matches_reference_in_emulation(kwargs):
    feeds = {"x": np.random.default_rng(8).standard_normal((2, 7, 96)).astype(np.float32) * 2 + 0.5}
    check_in_emulation(rms_chain(**kwargs), feeds, 1e-5)
